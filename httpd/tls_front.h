// The web port's TLS: a TLS terminator in front of the plaintext HttpServer.
//
// Debian 12's civetweb 1.15 cannot serve TLS with OpenSSL 3 (it looks up
// SSL_get_peer_certificate, which OpenSSL 3 no longer exports, and then calls the null
// pointer on the first handshake), so benchd accepts TLS here, with OpenSSL directly,
// and relays each connection's plaintext to the HttpServer listening on a loopback port
// of its own (Serve's `backend_port`). Bytes are relayed as they are: HTTP/1.1, keep-alive and
// event streams pass through unchanged.
//
// The certificate chain, key and client CA are re-read when one of their files changes
// (looked at, at most once per `refresh`, when a connection arrives); files that do not
// load keep the previous context and are logged. Client certificates are requested and,
// when sent, verified against the client CA (a foreign, expired or otherwise bad one
// fails the handshake); none is required, so token users need none.
//
// Who is at the other end: the verified certificate's URI SANs are kept for as long as
// the relayed connection lives, keyed by that connection's whole 4-tuple on the loopback
// hop: the relay socket's own address and port (which the HttpServer sees as the
// request's remote address and port) and the HttpServer's port (its local port; it
// listens on 127.0.0.1 alone). `PeerUris(remote_addr, remote_port, local_port)` answers
// only for that exact connection. The kernel keeps a TCP 4-tuple unique while a socket
// holds it, and the front holds its relay socket until after it has dropped the entry, so
// no other socket can present the same tuple while it names an identity: another local
// user who reads the relay's port from /proc/net/tcp, binds 127.0.0.2 (or any address)
// on it and connects to the internal port is a different connection, and anonymous.
// (A port alone would not do: that is the attack of issue 24.)
//
// Why TCP and not a Unix socket the front owns: Debian 12's civetweb 1.15 is built
// without USE_X_DOM_SOCKET (mg_check_feature(MG_FEATURES_X_DOMAIN_SOCKET) is 0, and an
// "x/PATH" listening port fails to start), and civetweb takes no connection it did not
// accept itself, so neither a Unix socket nor a socketpair can reach it. The internal
// port stays reachable by other local users, but only as what they are: callers without
// a certificate, who need a token as they would through the front.
//
// One thread per connection, at most `max_connections` at once (more are closed at
// once); a handshake or a stalled TLS record is cut after `io_timeout`. Thread-safe.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace bench {

struct TlsFrontOptions {
  std::string cert_file;  // PEM certificate chain (--tls-cert)
  std::string key_file;   // PEM private key (--tls-key)
  std::string client_ca;  // PEM CA bundle for client certificates (--client-ca); may be empty
  absl::Duration refresh = absl::Seconds(60);
  int max_connections = 64;
  absl::Duration io_timeout = absl::Seconds(10);
};

class TlsFront {
 public:
  // Loads the files (INVALID_ARGUMENT naming the flag whose file does not load) and
  // binds host:port (port 0 picks one; UNAVAILABLE naming the address when it cannot).
  // Connections wait in the backlog until Serve().
  static absl::StatusOr<std::unique_ptr<TlsFront>> Listen(const TlsFrontOptions& options,
                                                          const std::string& host, int port);
  // Starts accepting, relaying each connection to 127.0.0.1:backend_port. Once.
  void Serve(int backend_port);
  ~TlsFront();  // Stop()
  TlsFront(const TlsFront&) = delete;
  TlsFront& operator=(const TlsFront&) = delete;

  int port() const;
  // The URI SANs of the verified client certificate of the live connection relayed from
  // `relay_addr`:`relay_port` (numeric, as the HttpServer reports the remote address) to
  // the backend's port `backend_port`; empty when it sent none, when there is no such
  // relayed connection, or when any part of the 4-tuple differs.
  std::vector<std::string> PeerUris(const std::string& relay_addr, int relay_port,
                                    int backend_port) const;
  // Connections accepted and not yet finished (handshaking or relaying).
  int open_connections() const;
  // Stops accepting, closes every relayed connection, waits for their threads.
  // Idempotent.
  void Stop();

 private:
  struct Impl;
  explicit TlsFront(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace bench
