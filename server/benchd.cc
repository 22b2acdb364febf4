#include "server/benchd.h"

#include <grpcpp/ext/proto_server_reflection_plugin.h>
#include <grpcpp/grpcpp.h>
#include <grpcpp/health_check_service_interface.h>
#include <grpcpp/impl/server_builder_option.h>
#include <grpcpp/impl/server_builder_plugin.h>

#include <unistd.h>

#include <algorithm>
#include <filesystem>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/log.h"
#include "common/loopback.h"
#include "common/status_macros.h"
#include "httpd/http_server.h"
#include "httpd/tls_front.h"
#include "server/auth/agent_bootstrap.h"
#include "server/auth/agent_signer.h"
#include "server/auth/join_tokens.h"
#include "server/auth/token_file.h"
#include "server/core/job_manager.h"
#include "server/core/read_service.h"
#include "server/http/http_auth.h"
#include "server/http/live_streams.h"
#include "server/http/web_api.h"
#include "server/http/web_page.h"
#include "server/metrics/live_metrics.h"
#include "server/metrics/metrics_exporter.h"
#include "server/rpc/agent_service.h"
#include "server/rpc/controller_service.h"
#include "server/rpc/grpc_auth.h"
#include "server/store/database_lock.h"
#include "server/store/store.h"

namespace bench {
namespace {

absl::Status SplitHostPort(const std::string& flag, const std::string& value, std::string* host,
                           int* port) {
  size_t colon = value.rfind(':');
  if (colon == std::string::npos || !absl::SimpleAtoi(value.substr(colon + 1), port) || *port < 0 ||
      *port > 65535) {
    return absl::InvalidArgumentError(
        absl::StrCat(flag, ": expected HOST:PORT, got \"", value, "\""));
  }
  *host = value.substr(0, colon);
  if (host->size() >= 2 && host->front() == '[' && host->back() == ']') {
    *host = host->substr(1, host->size() - 2);
  }
  return absl::OkStatus();
}

// Linking libgrpc++_reflection (for --grpc-reflection) registers its plugin with every
// ServerBuilder through a static initializer; without the flag this takes it out again.
class WithoutReflection : public grpc::ServerBuilderOption {
 public:
  void UpdateArguments(grpc::ChannelArguments*) override {}
  void UpdatePlugins(std::vector<std::unique_ptr<grpc::ServerBuilderPlugin>>* plugins) override {
    plugins->erase(std::remove_if(plugins->begin(), plugins->end(),
                                  [](const std::unique_ptr<grpc::ServerBuilderPlugin>& plugin) {
                                    return plugin->name() == "proto_server_reflection";
                                  }),
                   plugins->end());
  }
};

}  // namespace

absl::Status CheckSecurityOptions(const BenchdOptions& options) {
  if (options.tls_cert.empty() != options.tls_key.empty()) {
    return absl::InvalidArgumentError("--tls-cert and --tls-key go together: give both");
  }
  if (!options.client_ca.empty() && options.tls_cert.empty()) {
    return absl::InvalidArgumentError(
        "--client-ca needs --tls-cert and --tls-key (client certificates need TLS)");
  }
  if (options.agent_signing_cert.empty() != options.agent_signing_key.empty()) {
    return absl::InvalidArgumentError(
        "--agent-signing-cert and --agent-signing-key go together: give both");
  }
  if (!options.agent_signing_cert.empty() && options.client_ca.empty()) {
    return absl::InvalidArgumentError(
        "--agent-signing-cert needs --client-ca (which must trust what it signs) and TLS");
  }
  if (options.cert_refresh < absl::Seconds(1)) {
    return absl::InvalidArgumentError("--cert-refresh must be at least 1s");
  }
  const bool authenticated = !options.client_ca.empty() || !options.tokens.empty();
  if ((!options.tls_cert.empty() && authenticated) || options.insecure) return absl::OkStatus();
  for (const auto& [flag, value] :
       {std::pair<const char*, const std::string*>{"--listen", &options.listen},
        {"--http", &options.http}}) {
    if (value->empty()) continue;
    std::string host;
    int port = 0;
    RETURN_IF_ERROR(SplitHostPort(flag, *value, &host, &port));
    // Loopback only when every address the host resolves to is (common/loopback.h).
    const absl::Status loopback = CheckLoopbackHost(host);
    if (loopback.ok()) continue;
    if (options.tls_cert.empty()) {
      return absl::InvalidArgumentError(absl::StrCat(
          flag, " ", *value, " is not a loopback address (", loopback.message(),
          "): serving it without TLS needs --tls-cert and --tls-key (or --insecure to serve "
          "it in the clear anyway)"));
    }
    return absl::InvalidArgumentError(
        absl::StrCat(flag, " ", *value, " is not a loopback address (", loopback.message(),
                     "): TLS alone lets every caller act as an admin; turn authentication on with "
                     "--client-ca and/or --tokens (or --insecure to serve it so anyway)"));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<Benchd>> Benchd::Start(const BenchdOptions& options) {
  std::string grpc_host, http_host;
  int grpc_port = 0, http_port = 0;
  RETURN_IF_ERROR(SplitHostPort("--listen", options.listen, &grpc_host, &grpc_port));
  if (!options.http.empty()) {
    RETURN_IF_ERROR(SplitHostPort("--http", options.http, &http_host, &http_port));
  }
  RETURN_IF_ERROR(CheckSecurityOptions(options));
  std::shared_ptr<grpc::ServerCredentials> credentials = grpc::InsecureServerCredentials();
  if (!options.tls_cert.empty()) {
    ASSIGN_OR_RETURN(credentials,
                     MakeTlsServerCredentials(options.tls_cert, options.tls_key, options.client_ca,
                                              options.cert_refresh));
  }
  auto benchd = std::unique_ptr<Benchd>(new Benchd());
  // Before the database is opened: a second benchd on it would recover and schedule the
  // same jobs as the first.
  absl::StatusOr<std::unique_ptr<DatabaseLock>> lock = DatabaseLock::Acquire(options.db);
  if (!lock.ok()) {
    return absl::Status(lock.status().code(),
                        absl::StrCat("--db ", options.db, ": ", lock.status().message()));
  }
  if (!(*lock)->held()) {
    Log("--db ", options.db, ": not locked against a second benchd (a read-only file system ",
        "without ", (*lock)->path(), ")");
  }
  benchd->database_lock_ = std::move(*lock);
  absl::StatusOr<std::unique_ptr<Store>> store = Store::Open(options.db);
  if (!store.ok()) {
    return absl::Status(store.status().code(),
                        absl::StrCat("--db ", options.db, ": ", store.status().message()));
  }
  benchd->store_ = std::move(*store);
  if (!options.tokens.empty()) {
    absl::StatusOr<std::unique_ptr<TokenFile>> tokens =
        TokenFile::Open(options.tokens, options.cert_refresh);
    if (!tokens.ok()) {
      return absl::Status(tokens.status().code(),
                          absl::StrCat("--tokens: ", tokens.status().message()));
    }
    benchd->tokens_ = std::move(*tokens);
  }
  benchd->security_on_ = !options.client_ca.empty() || !options.tokens.empty();
  benchd->join_tokens_ = std::make_unique<JoinTokens>(benchd->store_.get());
  if (!options.agent_signing_cert.empty()) {
    ASSIGN_OR_RETURN(
        benchd->signer_,
        AgentSigner::Load(options.agent_signing_cert, options.agent_signing_key, options.client_ca,
                          options.agent_cert_ttl, absl::Now(), options.agent_cert_min_ttl));
  }
  const GrpcAuthenticator auth =
      benchd->security_on_
          ? GrpcAuthenticator::On(benchd->tokens_.get(), benchd->join_tokens_.get())
          : GrpcAuthenticator::Off();
  JobManagerOptions manager_options;
  manager_options.agent_lease = options.agent_lease;
  manager_options.heartbeat_interval = options.heartbeat_interval;
  manager_options.max_requeues = options.max_requeues;
  manager_options.reconcile_grace = options.reconcile_grace > absl::ZeroDuration()
                                        ? options.reconcile_grace
                                        : options.agent_lease;
  manager_options.default_wall_time = options.default_wall_time;
  manager_options.default_hang_timeout = options.default_hang_timeout;
  manager_options.external_allocation = !options.slurm.partition.empty();
  // Slurm's SIGTERM reaches every agent at once; its state says why a moment later.
  manager_options.allocation_grace = absl::Seconds(30);
  benchd->metrics_ = std::make_unique<LiveMetrics>(options.metrics_retention);
  // LiveMetrics is the manager's JobEvents: /metrics follows what happens to jobs.
  benchd->manager_ =
      std::make_unique<JobManager>(benchd->store_.get(), manager_options, benchd->metrics_.get());
  benchd->reads_ = std::make_unique<ReadService>(benchd->store_.get(), benchd->manager_.get());
  // The web port opens before recovery, so /healthz answers and /readyz says
  // "recovering" while a large database loads.
  if (!options.http.empty()) {
    ASSIGN_OR_RETURN(benchd->http_port_, benchd->StartHttp(options, http_host, http_port));
  }
  RETURN_IF_ERROR(benchd->manager_->Recover());

  JobManager* manager = benchd->manager_.get();
  benchd->bootstrap_ = std::make_unique<AgentBootstrap>(
      benchd->join_tokens_.get(), benchd->signer_.get(),
      [manager](const std::string& node) { return manager->AgentLive(node); });
  benchd->controller_service_ = std::make_unique<ControllerService>(
      benchd->manager_.get(), benchd->reads_.get(), auth, benchd->join_tokens_.get());
  // The agent RPCs are counted where /metrics reads them (bench_agent_rpcs_total).
  benchd->agent_service_ = std::make_unique<AgentServiceImpl>(
      benchd->manager_.get(), auth, benchd->bootstrap_.get(), &benchd->metrics_->agent_rpcs());
  // grpc.health.v1.Health, always, and without credentials (it is not ours to guard).
  grpc::EnableDefaultHealthCheckService(true);
  if (options.grpc_reflection) grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  grpc::ServerBuilder builder;
  if (!options.grpc_reflection) builder.SetOption(std::make_unique<WithoutReflection>());
  builder.AddListeningPort(options.listen, credentials, &benchd->grpc_port_);
  builder.RegisterService(benchd->controller_service_.get());
  builder.RegisterService(benchd->agent_service_.get());
  // gRPC's default, 4 MiB: every request is bounded well below it (a spec's limits, an
  // inventory's, an upload batch of 2,000 samples), and a larger one is refused
  // RESOURCE_EXHAUSTED before it is parsed. It was 64 MiB, which let a 63 MiB job name in.
  builder.SetMaxReceiveMessageSize(4 << 20);
  benchd->server_ = builder.BuildAndStart();
  if (benchd->server_ == nullptr || benchd->grpc_port_ == 0) {
    return absl::UnavailableError(
        absl::StrCat("--listen ", options.listen, ": cannot listen (address in use?)"));
  }
  // The health service answers SERVING for "" by itself; grpc-health-probe and
  // Kubernetes' gRPC probes may also ask for our services by name (server/rpc/security_test.cc
  // checks these against the .proto's names). Shutdown() turns every name NOT_SERVING.
  if (grpc::HealthCheckServiceInterface* health = benchd->server_->GetHealthCheckService()) {
    for (const char* service : {"benchfleet.v1.Controller", "benchfleet.v1.AgentService"}) {
      health->SetServingStatus(service, true);
    }
  }

  benchd->ready_ = true;  // /readyz; main.cc tells systemd READY=1 when Start returns
  benchd->manager_->BeginReconcileGrace();
  benchd->liveness_ = std::thread([b = benchd.get()] { b->LivenessLoop(); });
  if (!options.slurm.partition.empty()) {
    SlurmOptions slurm = options.slurm;
    if (slurm.controller.empty()) {
      std::string host = grpc_host;
      if (host.empty() || host == "0.0.0.0" || host == "::" || host == "[::]") {
        char name[256] = {};
        gethostname(name, sizeof(name) - 1);
        host = name;
      }
      slurm.controller = absl::StrCat(host, ":", benchd->grpc_port_);
    }
    if (slurm.script_dir.empty()) {
      slurm.script_dir = std::filesystem::path(options.db).parent_path().append("slurm").string();
      if (slurm.script_dir == "slurm") slurm.script_dir = "./slurm";
    }
    // With a signer and no --slurm-agent-cert-dir, each allocation's agents enrol with a
    // join token of its own.
    benchd->slurm_ = std::make_unique<SlurmAllocator>(
        benchd->manager_.get(), slurm, benchd->signer_ ? benchd->join_tokens_.get() : nullptr);
    RETURN_IF_ERROR(benchd->slurm_->Start());
    Log("Slurm allocates: partition ", slurm.partition, ", agents dial ", slurm.controller,
        ", batch scripts in ", slurm.script_dir);
  }
  Log("serving gRPC on ", grpc_host, ":", benchd->grpc_port_,
      options.http.empty() ? ""
                           : absl::StrCat(benchd->tls_front_ ? ", HTTPS on " : ", HTTP on ",
                                          http_host, ":", benchd->http_port_),
      ", database ", options.db);
  return benchd;
}

absl::StatusOr<int> Benchd::StartHttp(const BenchdOptions& options, const std::string& host,
                                      int port) {
  http_ = std::make_unique<HttpServer>();
  Store* store = store_.get();
  http_->Handle("/healthz", [store](const HttpRequest&) {
    absl::Status database = store->Check(absl::Seconds(2));
    if (!database.ok())
      return HttpResponse{503, "text/plain; charset=utf-8", absl::StrCat(database.message(), "\n")};
    return HttpResponse{200, "text/plain; charset=utf-8", "ok\n"};
  });
  http_->Handle("/readyz", [this](const HttpRequest&) {
    if (!ready_) return HttpResponse{503, "text/plain; charset=utf-8", "recovering jobs\n"};
    return HttpResponse{200, "text/plain; charset=utf-8", "ready\n"};
  });
  JobManager* manager = manager_.get();
  LiveMetrics* metrics = metrics_.get();
  http_->Handle("/metrics", [manager, metrics](const HttpRequest&) {
    return HttpResponse{200, "text/plain; version=0.0.4; charset=utf-8",
                        RenderMetrics(manager->Fleet(), metrics->Take(absl::Now()))};
  });
  RegisterWebApi(*http_, manager, reads_.get(), store);
  RegisterLiveStreams(*http_, manager, store, metrics);
  RegisterWebPage(*http_);
  // HTTPS: the web server listens on a loopback port of its own behind the TLS front.
  if (!options.tls_cert.empty()) {
    TlsFrontOptions tls;
    tls.cert_file = options.tls_cert;
    tls.key_file = options.tls_key;
    tls.client_ca = options.client_ca;
    tls.refresh = options.cert_refresh;
    ASSIGN_OR_RETURN(tls_front_, TlsFront::Listen(tls, host, port));
  }
  // With security on, the data needs a credential allowed to read; the page's own files
  // (it asks for a token), /healthz and /readyz do not.
  if (security_on_) {
    const HttpAuthenticator auth = HttpAuthenticator::On(tokens_.get(), tls_front_.get());
    for (const char* prefix : {"/api/", "/metrics"}) {
      http_->SetGate(prefix,
                     [auth](const HttpRequest& request) { return auth.AuthorizeRead(request); });
    }
  }
  // Until recovery has loaded every job, the API would answer from a partial fleet.
  http_->SetGate("/api/", [this] {
    return ready_ ? absl::OkStatus()
                  : absl::UnavailableError("benchd is recovering its jobs; retry shortly");
  });
  if (!tls_front_) return http_->Start(host, port);
  ASSIGN_OR_RETURN(int backend_port, http_->Start("127.0.0.1", 0));
  tls_front_->Serve(backend_port);
  return tls_front_->port();
}

void Benchd::LivenessLoop() {
  while (!stop_.WaitForNotificationWithTimeout(absl::Milliseconds(250))) {
    manager_->CheckAgents(std::chrono::steady_clock::now());
    manager_->CheckLimits(absl::Now());
  }
}

absl::Status Benchd::CheckHealth(absl::Duration timeout) const { return store_->Check(timeout); }

void Benchd::Shutdown() {
  if (shut_down_) return;
  shut_down_ = true;
  // NOT_SERVING for every name from here on, while the rest stops (gRPC's own shutdown
  // below would say so only at its end).
  if (server_) {
    if (grpc::HealthCheckServiceInterface* health = server_->GetHealthCheckService()) {
      health->Shutdown();
    }
  }
  if (!stop_.HasBeenNotified()) stop_.Notify();
  if (liveness_.joinable()) liveness_.join();
  if (slurm_) slurm_->Stop();  // leaves the allocations: a restarted benchd takes them up
  if (tls_front_) tls_front_->Stop();
  if (http_) http_->Stop();  // ends the event streams before the manager they watch
  if (manager_) manager_->Shutdown();
  if (server_) server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(3));
  store_.reset();  // commits what is queued
  Log("stopped");
}

Benchd::~Benchd() { Shutdown(); }

}  // namespace bench
