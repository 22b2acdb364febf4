// A whole benchfleet on loopback for end-to-end tests: benchd and agents as real
// processes (the binaries the build produced), a fresh SQLite file in a temp dir, and
// a helper to run benchctl and capture what it prints.
//
// Fault injection for the fault tests: kill -9 benchd or a named agent, SIGSTOP/SIGCONT
// an agent, restart benchd on the same database and ports, extra benchd flags that stay
// across restarts, a per-agent --state-dir under the temp dir. Not thread-safe.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "common/run_command.h"
#include "common/subprocess.h"

namespace bench::testing {

struct CommandResult {
  int exit_code = -1;
  std::string output;  // stdout and stderr, interleaved
  std::string stdout_text;
};

class LoopbackCluster {
 public:
  // Binaries come from the build (paths compiled in by CMake).
  LoopbackCluster();
  // Kills everything it started (SIGCONT first, in case it was stopped; also the ranks
  // orphaned by KillAgent), removes the temp dir.
  ~LoopbackCluster();

  // Starts benchd on db_path() and this cluster's ports (picked at the first start and
  // kept, so a restart comes back where the agents look for it), with benchd_flags().
  absl::Status StartBenchd();
  // The same, after set_benchd_flags(flags).
  absl::Status StartBenchd(const std::vector<std::string>& flags);
  // SIGTERM to benchd; returns its exit code (0 for a graceful stop).
  int StopBenchd();
  // kill -9 benchd and reap it. Returns its exit code (-9), or -1 if none ran.
  int KillBenchd();
  // Whether benchd runs (started and not exited).
  bool BenchdAlive();
  // Runs another benchd on db_path(), on ports of its own, until it exits (60 s at most;
  // UNAVAILABLE past that): what a second benchd on this cluster's database does.
  absl::StatusOr<CommandOutput> RunSecondBenchd();
  pid_t benchd_pid() const;
  // Extra benchd flags ("--agent_lease=3s"), used from the next StartBenchd on.
  void set_benchd_flags(std::vector<std::string> flags) { benchd_flags_ = std::move(flags); }
  const std::vector<std::string>& benchd_flags() const { return benchd_flags_; }
  // Where benchd keeps its database (default DIR/bench.db); set before StartBenchd.
  void set_db_path(std::string path) { db_path_ = std::move(path); }

  // Every agent gets --state-dir agent_state_dir(name) (the default), so that no two
  // clusters share the host-wide default state dir and its spool; false: no --state-dir.
  void set_agent_state_dirs(bool on) { agent_state_dirs_ = on; }
  std::string agent_state_dir(const std::string& name) const;

  absl::Status StartAgent(const std::string& name, int cpu_slots);
  // An agent with `extra_args` after the usual ones (cpu_slots 0: no --cpu-slots) and
  // `env` on top of this process's environment (its ranks inherit it).
  absl::Status StartAgent(const std::string& name, int cpu_slots,
                          const std::vector<std::string>& extra_args,
                          const std::vector<std::pair<std::string, std::string>>& env = {});
  // Waits until benchd lists `count` connected agents.
  absl::Status WaitForAgents(int count, int timeout_s = 60);
  // kill -9 the agent `name` (only the agent: its rank processes are left orphaned, as
  // when an agent dies on a real node; the destructor kills them). Returns its exit code.
  int KillAgent(const std::string& name);
  // Sends `signal` to the agent process only (SIGSTOP, SIGCONT), not to its ranks.
  void SignalAgent(const std::string& name, int signal);
  // -1 if there is no such agent or it has exited.
  pid_t agent_pid(const std::string& name);
  // Pids of the live processes whose parent is the agent (its ranks).
  std::vector<pid_t> AgentChildren(const std::string& name);

  // Runs benchctl against this cluster's benchd, with benchctl_env() in its environment.
  CommandResult Benchctl(const std::vector<std::string>& args, int timeout_s = 600);
  // The same with `env` (and BENCH_SERVER) instead of benchctl_env(): another caller, or
  // none, when benchd runs with security on.
  CommandResult BenchctlAs(const std::vector<std::pair<std::string, std::string>>& env,
                           const std::vector<std::string>& args, int timeout_s = 60);
  // Added to every Benchctl run's environment (BENCH_TOKEN, BENCH_TLS_CA, ...), so that
  // StartBenchd's readiness check and WaitForAgents work against a secured benchd.
  void set_benchctl_env(std::vector<std::pair<std::string, std::string>> env) {
    benchctl_env_ = std::move(env);
  }

  const std::string& db_path() const { return db_path_; }
  const std::string& dir() const { return dir_; }
  std::string server() const;
  // benchd's web port (/healthz, /metrics), fixed at the first StartBenchd.
  int http_port() const { return http_port_; }
  // The tail of a process's log (benchd.log, agent-NAME.log) for failure messages.
  std::string Log(const std::string& file) const;

 private:
  Subprocess* FindAgent(const std::string& name);

  std::string dir_;
  std::string db_path_;
  int grpc_port_ = 0;
  int http_port_ = 0;
  std::vector<std::string> benchd_flags_;
  bool agent_state_dirs_ = true;
  std::vector<std::pair<std::string, std::string>> benchctl_env_;
  std::unique_ptr<Subprocess> benchd_;
  std::vector<std::pair<std::string, std::unique_ptr<Subprocess>>> agents_;
  // Ranks left behind by KillAgent: (pid, its executable) so a reused pid is not killed.
  std::vector<std::pair<pid_t, std::string>> orphans_;
};

// How many times `needle` occurs in `text` (for counting fields in benchctl's JSON).
int CountOccurrences(const std::string& text, const std::string& needle);

// The first column of the first row of `sql` over the database file, opened read-only
// (waiting up to 5 s for benchd's writer); -1 if it cannot be read.
int64_t QueryInt(const std::string& db_path, const std::string& sql);

}  // namespace bench::testing
