// benchd: the benchfleet controller daemon. Flags → BenchdOptions; SIGTERM/SIGINT stop
// it gracefully.
#include <signal.h>

#include <cstdio>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/synchronization/mutex.h"
#include "common/log.h"
#include "server/benchd.h"

ABSL_FLAG(std::string, listen, "127.0.0.1:7600", "gRPC address HOST:PORT (agents and benchctl)");
ABSL_FLAG(std::string, http, "127.0.0.1:7601", "web address HOST:PORT; empty to disable");
ABSL_FLAG(std::string, db, "benchfleet.db", "SQLite database file (created if missing)");
ABSL_FLAG(absl::Duration, agent_lease, absl::Seconds(30),
          "an agent not heard from for this long is lost");
ABSL_FLAG(absl::Duration, heartbeat_interval, absl::Seconds(5),
          "how often agents are asked to heartbeat");
ABSL_FLAG(int, requeue_on_node_lost, 1,
          "how many times a job that lost a node goes back to the queue before it fails "
          "(0: never)");
ABSL_FLAG(absl::Duration, reconcile_grace, absl::ZeroDuration(),
          "after a restart, how long RUNNING jobs wait for their agents to reconnect "
          "(0: the agent lease)");
ABSL_FLAG(absl::Duration, default_wall_time, absl::Hours(24),
          "wall-time limit of a job whose spec sets none");
ABSL_FLAG(absl::Duration, default_hang_timeout, absl::Minutes(10),
          "a job with no iteration stored for this long fails as hung, unless its spec "
          "sets its own");
ABSL_FLAG(absl::Duration, metrics_retention, absl::Minutes(10),
          "how long a finished job's series stay on /metrics");

int main(int argc, char** argv) {
  // Debian's Abseil is built with deadlock detection on, which keeps a lock graph on
  // every absl::Mutex acquisition; the server's lock order is fixed by design.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  absl::SetProgramUsageMessage(
      "benchfleet controller.\nUsage: benchd [--listen HOST:PORT] [--http HOST:PORT] [--db PATH]");
  absl::ParseCommandLine(argc, argv);
  bench::SetLogComponent("benchd");

  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);  // inherited by every thread
  signal(SIGPIPE, SIG_IGN);

  bench::BenchdOptions options;
  options.listen = absl::GetFlag(FLAGS_listen);
  options.http = absl::GetFlag(FLAGS_http);
  options.db = absl::GetFlag(FLAGS_db);
  options.agent_lease = absl::GetFlag(FLAGS_agent_lease);
  options.heartbeat_interval = absl::GetFlag(FLAGS_heartbeat_interval);
  options.metrics_retention = absl::GetFlag(FLAGS_metrics_retention);
  options.max_requeues = absl::GetFlag(FLAGS_requeue_on_node_lost);
  options.reconcile_grace = absl::GetFlag(FLAGS_reconcile_grace);
  options.default_wall_time = absl::GetFlag(FLAGS_default_wall_time);
  options.default_hang_timeout = absl::GetFlag(FLAGS_default_hang_timeout);
  if (options.max_requeues < 0 || options.default_wall_time <= absl::ZeroDuration() ||
      options.default_hang_timeout <= absl::ZeroDuration() ||
      options.reconcile_grace < absl::ZeroDuration()) {
    std::fprintf(stderr,
                 "benchd: --requeue_on_node_lost must be >= 0, --default_wall_time and "
                 "--default_hang_timeout > 0, --reconcile_grace >= 0\n");
    return 2;
  }
  auto benchd = bench::Benchd::Start(options);
  if (!benchd.ok()) {
    std::fprintf(stderr, "benchd: %s\n", std::string(benchd.status().message()).c_str());
    return 1;
  }
  int received = 0;
  sigwait(&signals, &received);
  bench::Log("received signal ", received, ", shutting down");
  (*benchd)->Shutdown();
  return 0;
}
