// benchd: the benchfleet controller daemon. Flags → BenchdOptions; SIGTERM/SIGINT stop
// it gracefully.
//
// Flags are spelled with dashes, as benchctl's and bench-agent's are (`--agent-lease`);
// the underscore spellings of earlier releases (`--agent_lease`) still work as hidden
// aliases. Parsed with CLI11 (header-only, as benchctl uses it); durations as Abseil
// writes them ("30s", "10m", "1h30m").
#include <signal.h>

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/build_info.h"
#include "common/log.h"
#include "common/openssl_exit.h"
#include "common/sd_notify.h"
#include "server/benchd.h"
#include "server/heap_policy.h"

namespace {

struct Flags {
  std::string listen = "127.0.0.1:7600";
  std::string http = "127.0.0.1:7601";
  std::string db = "benchfleet.db";
  std::string agent_lease = "30s";
  std::string heartbeat_interval = "5s";
  std::string requeue_on_node_lost = "1";
  std::string reconcile_grace = "0";
  std::string default_wall_time = "24h";
  std::string default_hang_timeout = "10m";
  std::string metrics_retention = "10m";
  std::string tls_cert;
  std::string tls_key;
  std::string client_ca;
  std::string tokens;
  std::string agent_signing_cert;
  std::string agent_signing_key;
  std::string agent_cert_ttl = "24h";
  std::string cert_refresh = "60s";
  bool insecure = false;
  bool grpc_reflection = false;
  std::string slurm_partition;
  std::string slurm_agent = "bench-agent";
  std::string slurm_controller;
  std::string slurm_agent_cert_dir;
  std::string slurm_script_dir;
  std::string slurm_poll = "2s";
  std::string slurm_time_margin = "5m";
  bool slurm_cpu_nodes = false;
};

// `--dashed-name` in the help, and `--dashed_name` as a hidden alias writing the same value.
void AddFlag(CLI::App& app, const std::string& name, std::string* value, const std::string& help,
             const std::string& placeholder) {
  app.add_option("--" + name, *value, help)
      ->type_name(placeholder)
      ->capture_default_str()
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  std::string alias = name;
  for (char& c : alias) c = c == '-' ? '_' : c;
  if (alias != name) {
    app.add_option("--" + alias, *value)
        ->group("")  // hidden
        ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  }
}

bool ParseDurationFlag(const char* flag, const std::string& text, absl::Duration* out) {
  if (absl::ParseDuration(text, out)) return true;
  std::fprintf(stderr, "benchd: --%s: expected a duration (30s, 10m, 1h30m), got \"%s\"\n", flag,
               text.c_str());
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  bench::InitOpenSslWithoutExitCleanup();  // before gRPC: common/openssl_exit.h
  // Debian's Abseil is built with deadlock detection on, which keeps a lock graph on
  // every absl::Mutex acquisition; the server's lock order is fixed by design.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);

  Flags flags;
  CLI::App app("benchfleet controller.", "benchd");
  app.set_version_flag("--version", bench::VersionLine("benchd"), "print the version and build id");
  AddFlag(app, "listen", &flags.listen, "gRPC address HOST:PORT (agents and benchctl)",
          "HOST:PORT");
  AddFlag(app, "http", &flags.http, "web address HOST:PORT; empty to disable", "HOST:PORT");
  AddFlag(app, "db", &flags.db, "SQLite database file (created if missing)", "PATH");
  AddFlag(app, "agent-lease", &flags.agent_lease, "an agent not heard from for this long is lost",
          "DURATION");
  AddFlag(app, "heartbeat-interval", &flags.heartbeat_interval,
          "how often agents are asked to heartbeat", "DURATION");
  AddFlag(app, "requeue-on-node-lost", &flags.requeue_on_node_lost,
          "how many times a job that lost a node goes back to the queue before it fails "
          "(0: never)",
          "N");
  AddFlag(app, "reconcile-grace", &flags.reconcile_grace,
          "after a restart, how long RUNNING jobs wait for their agents to reconnect "
          "(0: the agent lease)",
          "DURATION");
  AddFlag(app, "default-wall-time", &flags.default_wall_time,
          "wall-time limit of a job whose spec sets none", "DURATION");
  AddFlag(app, "default-hang-timeout", &flags.default_hang_timeout,
          "a job with no iteration stored for this long fails as hung, unless its spec sets "
          "its own",
          "DURATION");
  AddFlag(app, "metrics-retention", &flags.metrics_retention,
          "how long a finished job's series stay on /metrics", "DURATION");
  AddFlag(app, "tls-cert", &flags.tls_cert,
          "TLS certificate chain (PEM) for the gRPC and web ports; re-read when it changes",
          "FILE");
  AddFlag(app, "tls-key", &flags.tls_key, "TLS private key (PEM) for --tls-cert", "FILE");
  AddFlag(app, "client-ca", &flags.client_ca,
          "verify client certificates against this CA (PEM); turns authentication on", "FILE");
  AddFlag(app, "tokens", &flags.tokens,
          "hashed bearer tokens, lines 'sha256:<hex> <role> <name>'; turns authentication on",
          "FILE");
  AddFlag(app, "agent-signing-cert", &flags.agent_signing_cert,
          "a CA certificate (PEM, then its chain) trusted by --client-ca that signs agents' "
          "certificates for join tokens and renewals (docs/security.md)",
          "FILE");
  AddFlag(app, "agent-signing-key", &flags.agent_signing_key,
          "the private key (PEM) of --agent-signing-cert", "FILE");
  AddFlag(app, "agent-cert-ttl", &flags.agent_cert_ttl,
          "lifetime of the agent certificates benchd signs (at least 1m)", "DURATION");
  AddFlag(app, "cert-refresh", &flags.cert_refresh,
          "how often certificate, key, CA and token files are checked for changes", "DURATION");
  app.add_flag("--insecure", flags.insecure, "allow serving a non-loopback address without TLS");
  app.add_flag("--grpc-reflection", flags.grpc_reflection, "serve gRPC server reflection");
  AddFlag(app, "slurm-partition", &flags.slurm_partition,
          "Slurm allocates: each job becomes a Slurm job in this partition whose step starts "
          "its agents (docs/deploy-slurm.md)",
          "PARTITION");
  AddFlag(app, "slurm-agent", &flags.slurm_agent,
          "with --slurm-partition: bench-agent's command on the nodes, with flags of its own "
          "(TLS), split on spaces",
          "COMMAND");
  AddFlag(app, "slurm-controller", &flags.slurm_controller,
          "with --slurm-partition: the address the agents dial (default: --listen's, this "
          "host's name for a wildcard)",
          "HOST:PORT");
  AddFlag(app, "slurm-agent-cert-dir", &flags.slurm_agent_cert_dir,
          "with --slurm-partition: each node's agent presents DIR/<node>.pem and DIR/<node>.key "
          "(deploy/pki/make-client-cert.sh agent <node>); without it, and with "
          "--agent-signing-cert, each allocation's agents enrol with a join token of its own",
          "DIR");
  AddFlag(app, "slurm-script-dir", &flags.slurm_script_dir,
          "with --slurm-partition: where batch scripts and their output go, on a file system "
          "the nodes share if Slurm writes output there (default: slurm/ beside --db)",
          "DIR");
  AddFlag(app, "slurm-poll", &flags.slurm_poll, "with --slurm-partition: how often Slurm is read",
          "DURATION");
  AddFlag(app, "slurm-time-margin", &flags.slurm_time_margin,
          "with --slurm-partition: added to a job's wall-time limit for Slurm's --time",
          "DURATION");
  app.add_flag("--slurm-cpu-nodes", flags.slurm_cpu_nodes,
               "with --slurm-partition: the nodes have no GPUs; ask for CPUs, agents offer CPU "
               "slots");
  // CLI11 reads "--flag=" (an empty value after the '=', e.g. --http= to turn the web
  // port off) as a missing value, so that one is handed over as "--flag" "". CLI11
  // wants the arguments in reverse.
  std::vector<std::string> reversed;
  for (int i = argc - 1; i >= 1; --i) {
    const std::string arg = argv[i];
    if (arg.size() > 3 && arg.compare(0, 2, "--") == 0 && arg.find('=') == arg.size() - 1) {
      reversed.emplace_back();
      reversed.push_back(arg.substr(0, arg.size() - 1));
    } else {
      reversed.push_back(arg);
    }
  }
  try {
    app.parse(reversed);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::fprintf(stderr, "benchd: %s (see benchd --help)\n", e.what());
    return 2;
  }
  bench::SetLogComponent("benchd");

  bench::BenchdOptions options;
  options.listen = flags.listen;
  options.http = flags.http;
  options.db = flags.db;
  options.tls_cert = flags.tls_cert;
  options.tls_key = flags.tls_key;
  options.client_ca = flags.client_ca;
  options.tokens = flags.tokens;
  options.agent_signing_cert = flags.agent_signing_cert;
  options.agent_signing_key = flags.agent_signing_key;
  options.insecure = flags.insecure;
  options.grpc_reflection = flags.grpc_reflection;
  options.slurm.partition = flags.slurm_partition;
  options.slurm.agent_command =
      absl::StrSplit(flags.slurm_agent, ' ', absl::SkipWhitespace());
  options.slurm.controller = flags.slurm_controller;
  options.slurm.agent_cert_dir = flags.slurm_agent_cert_dir;
  options.slurm.script_dir = flags.slurm_script_dir;
  options.slurm.cpu_nodes = flags.slurm_cpu_nodes;
  if (!ParseDurationFlag("agent-lease", flags.agent_lease, &options.agent_lease) ||
      !ParseDurationFlag("heartbeat-interval", flags.heartbeat_interval,
                         &options.heartbeat_interval) ||
      !ParseDurationFlag("metrics-retention", flags.metrics_retention,
                         &options.metrics_retention) ||
      !ParseDurationFlag("reconcile-grace", flags.reconcile_grace, &options.reconcile_grace) ||
      !ParseDurationFlag("default-wall-time", flags.default_wall_time,
                         &options.default_wall_time) ||
      !ParseDurationFlag("default-hang-timeout", flags.default_hang_timeout,
                         &options.default_hang_timeout) ||
      !ParseDurationFlag("cert-refresh", flags.cert_refresh, &options.cert_refresh) ||
      !ParseDurationFlag("agent-cert-ttl", flags.agent_cert_ttl, &options.agent_cert_ttl) ||
      !ParseDurationFlag("slurm-poll", flags.slurm_poll, &options.slurm.poll_interval) ||
      !ParseDurationFlag("slurm-time-margin", flags.slurm_time_margin,
                         &options.slurm.time_margin)) {
    return 2;
  }
  if (!absl::SimpleAtoi(flags.requeue_on_node_lost, &options.max_requeues)) {
    std::fprintf(stderr, "benchd: --requeue-on-node-lost: expected an integer, got \"%s\"\n",
                 flags.requeue_on_node_lost.c_str());
    return 2;
  }
  if (options.max_requeues < 0 || options.default_wall_time <= absl::ZeroDuration() ||
      options.default_hang_timeout <= absl::ZeroDuration() ||
      options.reconcile_grace < absl::ZeroDuration() ||
      options.slurm.poll_interval <= absl::ZeroDuration() ||
      options.slurm.time_margin < absl::ZeroDuration() ||
      (!options.slurm.partition.empty() && options.slurm.agent_command.empty())) {
    std::fprintf(stderr,
                 "benchd: --requeue-on-node-lost must be >= 0, --default-wall-time, "
                 "--default-hang-timeout and --slurm-poll > 0, --reconcile-grace and "
                 "--slurm-time-margin >= 0, --slurm-agent not empty\n");
    return 2;
  }

  if (options.agent_cert_ttl < options.agent_cert_min_ttl) {
    std::fprintf(stderr, "benchd: --agent-cert-ttl must be at least 1m\n");
    return 2;
  }
  if (absl::Status security = bench::CheckSecurityOptions(options); !security.ok()) {
    std::fprintf(stderr, "benchd: %s\n", std::string(security.message()).c_str());
    return 2;
  }

  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);  // inherited by every thread
  signal(SIGPIPE, SIG_IGN);

  // The allocator is set before main (server/heap_policy.h); a setting overridden is
  // worth a line, not a refusal.
  absl::StatusOr<std::string> heap = bench::ControllerHeapInUse();
  if (heap.ok()) {
    bench::Log("allocator: ", *heap);
  } else {
    bench::Log("allocator: ", heap.status().message());
  }

  // systemd (Type=notify, docs/deploy-systemd.md): no-ops unless it runs us.
  bench::SdNotifyOrLog(absl::StrCat("STATUS=opening ", options.db, " and recovering its jobs"));
  auto benchd = bench::Benchd::Start(options);
  if (!benchd.ok()) {
    std::fprintf(stderr, "benchd: %s\n", std::string(benchd.status().message()).c_str());
    return 1;
  }
  bench::SdNotifyOrLog(absl::StrCat("READY=1\nSTATUS=serving: gRPC port ", (*benchd)->grpc_port(),
                                    ", web port ", (*benchd)->http_port(), ", database ",
                                    options.db));
  absl::StatusOr<absl::Duration> watchdog_interval = bench::SdWatchdogInterval();
  if (!watchdog_interval.ok()) bench::Log("no watchdog: ", watchdog_interval.status().message());
  auto watchdog = std::make_unique<bench::SdWatchdog>(
      watchdog_interval.value_or(absl::ZeroDuration()),
      [server = benchd->get(), timeout = watchdog_interval.value_or(absl::ZeroDuration()) / 4] {
        return server->CheckHealth(timeout);
      });

  int received = 0;
  sigwait(&signals, &received);
  bench::Log("received signal ", received, ", shutting down");
  bench::SdNotifyOrLog("STOPPING=1\nSTATUS=shutting down");
  watchdog.reset();
  (*benchd)->Shutdown();
  return 0;
}
