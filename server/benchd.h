// benchd assembled: store, job manager, read service, gRPC services, HTTP port and the liveness
// timer, started and stopped as one unit. Tests start it in-process on port 0.
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <thread>

#include "absl/status/statusor.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "server/slurm/slurm_allocator.h"

namespace grpc {
class Server;
}

namespace bench {

class DatabaseLock;
class Store;
class JobManager;
class ReadService;
class ControllerService;
class AgentServiceImpl;
class HttpServer;
class TlsFront;
class LiveMetrics;
class TokenFile;
class JoinTokens;
class AgentSigner;
class AgentBootstrap;

struct BenchdOptions {
  std::string listen = "127.0.0.1:7600";  // gRPC, HOST:PORT (port 0 picks one)
  std::string http = "127.0.0.1:7601";    // web port, HOST:PORT; empty disables it
  std::string db = "benchfleet.db";
  absl::Duration agent_lease = absl::Seconds(30);
  absl::Duration heartbeat_interval = absl::Seconds(5);
  int max_requeues = 1;                                   // --requeue_on_node_lost
  absl::Duration reconcile_grace = absl::ZeroDuration();  // zero: the agent lease
  absl::Duration default_wall_time = absl::Hours(24);
  absl::Duration default_hang_timeout = absl::Minutes(10);
  // How long a finished job's series stay on /metrics.
  absl::Duration metrics_retention = absl::Minutes(10);
  // Transport security (docs/security.md). TLS on the gRPC and web ports when tls_cert
  // is set; client certificates verified against client_ca; bearer tokens from `tokens`.
  // Security (authentication and roles) is on when client_ca or tokens is set.
  std::string tls_cert;
  std::string tls_key;
  std::string client_ca;
  std::string tokens;
  absl::Duration cert_refresh = absl::Seconds(60);  // how often those files are re-read
  // The agents' certificate bootstrap (docs/security.md): the CA that signs agents'
  // certificates (trusted by client_ca) and its key; the issued certificates' lifetime.
  std::string agent_signing_cert;
  std::string agent_signing_key;
  absl::Duration agent_cert_ttl = absl::Hours(24);
  absl::Duration agent_cert_min_ttl = absl::Minutes(1);  // no flag: tests set less
  bool insecure = false;                            // allow a non-loopback address without TLS
  bool grpc_reflection = false;                     // serve gRPC server reflection
  // Slurm allocates (server/slurm/slurm_allocator.h) when slurm.partition is set. Unset
  // slurm.controller: --listen's address (this host's name for a wildcard address);
  // unset slurm.script_dir: "slurm" beside the database.
  SlurmOptions slurm;
};

// INVALID_ARGUMENT naming the flag when the security options do not fit together: a
// non-loopback --listen or --http without --insecure and without both TLS (--tls-cert)
// and authentication (--client-ca and/or --tokens), --tls-key
// without --tls-cert (or the reverse), --client-ca without --tls-cert, a cert refresh
// under 1 s, --agent-signing-cert without --agent-signing-key (or the reverse) or without
// --client-ca. main.cc exits 2 on it; Start() checks it too.
absl::Status CheckSecurityOptions(const BenchdOptions& options);

class Benchd {
 public:
  // Opens the database, recovers jobs and starts serving. Errors name the flag or path.
  static absl::StatusOr<std::unique_ptr<Benchd>> Start(const BenchdOptions& options);
  ~Benchd();  // Shutdown()

  int grpc_port() const { return grpc_port_; }
  int http_port() const { return http_port_; }
  // The health check behind /healthz, for the systemd watchdog too: the store's reader
  // and writer answer within `timeout` (Store::Check). Thread-safe; not after Shutdown().
  absl::Status CheckHealth(absl::Duration timeout) const;
  // Stops accepting work, ends open streams, drains the store. Idempotent.
  void Shutdown();

 private:
  Benchd() = default;
  void LivenessLoop();
  // Serves /healthz, /readyz, /metrics, the JSON API, the live streams and the page;
  // over TLS (a TlsFront) when options.tls_cert is set. With security on, /api/ and
  // /metrics need a credential that may read. Returns the port.
  absl::StatusOr<int> StartHttp(const BenchdOptions& options, const std::string& host, int port);

  // Held from before the store opens until after it closed (declared first: destroyed last).
  std::unique_ptr<DatabaseLock> database_lock_;
  std::unique_ptr<Store> store_;
  std::unique_ptr<LiveMetrics> metrics_;
  std::unique_ptr<TokenFile> tokens_;  // null without --tokens
  std::unique_ptr<JoinTokens> join_tokens_;
  std::unique_ptr<AgentSigner> signer_;  // null without --agent-signing-cert
  std::unique_ptr<AgentBootstrap> bootstrap_;
  std::unique_ptr<JobManager> manager_;
  std::unique_ptr<ReadService> reads_;
  std::unique_ptr<ControllerService> controller_service_;
  std::unique_ptr<AgentServiceImpl> agent_service_;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<HttpServer> http_;
  std::unique_ptr<TlsFront> tls_front_;  // null unless --tls-cert (then HTTPS)
  bool security_on_ = false;             // --client-ca or --tokens
  int grpc_port_ = 0;
  int http_port_ = 0;
  absl::Notification stop_;
  std::thread liveness_;
  std::unique_ptr<SlurmAllocator> slurm_;  // with --slurm-partition
  bool shut_down_ = false;
  std::atomic<bool> ready_{false};  // Recover() has returned and both ports listen
};

}  // namespace bench
