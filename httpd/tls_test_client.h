// For the web port's TLS tests: one HTTP/1.1 exchange over TLS to 127.0.0.1:port with
// OpenSSL, verifying the server against a CA file and optionally presenting a client
// certificate, so a test sees the handshake's outcome and the server's bytes; and a
// TLS connection held open for several exchanges (`TlsConnection`).
// Test-only; header-only.
#pragma once

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "httpd/http_test_client.h"

namespace bench::http_test {

struct TlsExchange {
  std::string response;        // every byte until the server closed, `read_until` came, or 5 s
  std::string server_subject;  // the server certificate's subject, "CN=..."
  bool resumed = false;        // the handshake resumed the session passed in
};

// UNAVAILABLE with OpenSSL's reason when the connection or the handshake fails (a
// refused client certificate may instead show as a connection closed before an answer).
// With `session` (not owned), the session it holds is offered for resumption and the
// exchange's session is left there (the caller frees it with SSL_SESSION_free).
inline absl::StatusOr<TlsExchange> TlsFetch(int port, const std::string& ca_file,
                                            const std::string& request,
                                            const std::string& cert_file = "",
                                            const std::string& key_file = "",
                                            const std::string& read_until = "",
                                            SSL_SESSION** session = nullptr) {
  auto error = [](const std::string& what) {
    unsigned long code = ERR_get_error();
    ERR_clear_error();
    char text[256] = "no OpenSSL error";
    if (code != 0) ERR_error_string_n(code, text, sizeof(text));
    return absl::UnavailableError(absl::StrCat(what, ": ", text));
  };
  std::unique_ptr<SSL_CTX, decltype(&SSL_CTX_free)> ctx(SSL_CTX_new(TLS_client_method()),
                                                        SSL_CTX_free);
  if (SSL_CTX_load_verify_locations(ctx.get(), ca_file.c_str(), nullptr) != 1) {
    return error("CA file");
  }
  SSL_CTX_set_verify(ctx.get(), SSL_VERIFY_PEER, nullptr);
  if (!cert_file.empty() &&
      (SSL_CTX_use_certificate_chain_file(ctx.get(), cert_file.c_str()) != 1 ||
       SSL_CTX_use_PrivateKey_file(ctx.get(), key_file.c_str(), SSL_FILETYPE_PEM) != 1)) {
    return error("client certificate");
  }
  int fd = ConnectLoopback(port);
  if (fd < 0) return absl::UnavailableError("connect failed");
  timeval tv{5, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  std::unique_ptr<SSL, decltype(&SSL_free)> ssl(SSL_new(ctx.get()), SSL_free);
  SSL_set_fd(ssl.get(), fd);
  SSL_set_tlsext_host_name(ssl.get(), "localhost");
  SSL_set1_host(ssl.get(), "localhost");
  if (session != nullptr && *session != nullptr) SSL_set_session(ssl.get(), *session);
  if (SSL_connect(ssl.get()) != 1) {
    absl::Status status = error("handshake");
    close(fd);
    return status;
  }
  TlsExchange out;
  out.resumed = SSL_session_reused(ssl.get()) == 1;
  if (X509* cert = SSL_get1_peer_certificate(ssl.get())) {
    char subject[256] = {0};
    X509_NAME_oneline(X509_get_subject_name(cert), subject, sizeof(subject));
    out.server_subject = subject;
    X509_free(cert);
  }
  if (SSL_write(ssl.get(), request.data(), static_cast<int>(request.size())) !=
      static_cast<int>(request.size())) {
    absl::Status status = error("write");
    close(fd);
    return status;
  }
  char buffer[8192];
  int n;
  while ((n = SSL_read(ssl.get(), buffer, sizeof(buffer))) > 0) {
    out.response.append(buffer, n);
    if (!read_until.empty() && out.response.find(read_until) != std::string::npos) break;
  }
  SSL_shutdown(ssl.get());  // else OpenSSL marks the session not resumable
  ERR_clear_error();
  if (session != nullptr) {
    if (*session != nullptr) SSL_SESSION_free(*session);
    *session = SSL_get1_session(ssl.get());
  }
  close(fd);
  return out;
}

// A TLS connection to 127.0.0.1:port kept open between requests (keep-alive), verifying
// the server against `ca_file`, presenting a client certificate when `cert_file` is given.
class TlsConnection {
 public:
  static absl::StatusOr<std::unique_ptr<TlsConnection>> Open(int port, const std::string& ca_file,
                                                             const std::string& cert_file = "",
                                                             const std::string& key_file = "") {
    auto connection = std::unique_ptr<TlsConnection>(new TlsConnection());
    SSL_CTX* ctx = connection->ctx_.get();
    if (ctx == nullptr || SSL_CTX_load_verify_locations(ctx, ca_file.c_str(), nullptr) != 1) {
      return Error("CA file");
    }
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, nullptr);
    if (!cert_file.empty() &&
        (SSL_CTX_use_certificate_chain_file(ctx, cert_file.c_str()) != 1 ||
         SSL_CTX_use_PrivateKey_file(ctx, key_file.c_str(), SSL_FILETYPE_PEM) != 1)) {
      return Error("client certificate");
    }
    connection->fd_ = ConnectLoopback(port);
    if (connection->fd_ < 0) return absl::UnavailableError("connect failed");
    timeval tv{10, 0};
    setsockopt(connection->fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    connection->ssl_.reset(SSL_new(ctx));
    SSL* ssl = connection->ssl_.get();
    SSL_set_fd(ssl, connection->fd_);
    SSL_set_tlsext_host_name(ssl, "localhost");
    SSL_set1_host(ssl, "localhost");
    if (SSL_connect(ssl) != 1) return Error("handshake");
    return connection;
  }
  ~TlsConnection() {
    if (fd_ >= 0) close(fd_);
  }

  // Sends `request`; reads until `until` has come (or the server closes, or 10 s pass).
  std::string Exchange(const std::string& request, const std::string& until) {
    if (SSL_write(ssl_.get(), request.data(), static_cast<int>(request.size())) !=
        static_cast<int>(request.size())) {
      return "write failed";
    }
    std::string response;
    char buffer[8192];
    int n;
    while (response.find(until) == std::string::npos &&
           (n = SSL_read(ssl_.get(), buffer, sizeof(buffer))) > 0) {
      response.append(buffer, n);
    }
    ERR_clear_error();
    return response;
  }

 private:
  TlsConnection() : ctx_(SSL_CTX_new(TLS_client_method()), SSL_CTX_free), ssl_(nullptr, SSL_free) {}
  static absl::Status Error(const std::string& what) {
    unsigned long code = ERR_get_error();
    ERR_clear_error();
    char text[256] = "no OpenSSL error";
    if (code != 0) ERR_error_string_n(code, text, sizeof(text));
    return absl::UnavailableError(absl::StrCat(what, ": ", text));
  }
  std::unique_ptr<SSL_CTX, decltype(&SSL_CTX_free)> ctx_;
  std::unique_ptr<SSL, decltype(&SSL_free)> ssl_;
  int fd_ = -1;
};

}  // namespace bench::http_test
