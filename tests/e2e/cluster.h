// A whole benchfleet on loopback for end-to-end tests: benchd and agents as real
// processes (the binaries the build produced), a fresh SQLite file in a temp dir, and
// a helper to run benchctl and capture what it prints.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
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
  ~LoopbackCluster();  // kills everything it started, removes the temp dir

  absl::Status StartBenchd();
  // SIGTERM to benchd; returns its exit code (0 for a graceful stop).
  int StopBenchd();
  absl::Status StartAgent(const std::string& name, int cpu_slots);
  // An agent with `extra_args` after the usual ones (cpu_slots 0: no --cpu-slots) and
  // `env` on top of this process's environment (its ranks inherit it).
  absl::Status StartAgent(const std::string& name, int cpu_slots,
                          const std::vector<std::string>& extra_args,
                          const std::vector<std::pair<std::string, std::string>>& env = {});
  // Waits until benchd lists `count` connected agents.
  absl::Status WaitForAgents(int count, int timeout_s = 60);

  // Runs benchctl against this cluster's benchd.
  CommandResult Benchctl(const std::vector<std::string>& args, int timeout_s = 600);

  const std::string& db_path() const { return db_path_; }
  const std::string& dir() const { return dir_; }
  std::string server() const;
  // benchd's web port (/healthz, /metrics), fixed at the first StartBenchd.
  int http_port() const { return http_port_; }
  // The tail of a process's log (benchd.log, agent-NAME.log) for failure messages.
  std::string Log(const std::string& file) const;

 private:
  std::string dir_;
  std::string db_path_;
  int grpc_port_ = 0;
  int http_port_ = 0;
  std::unique_ptr<Subprocess> benchd_;
  std::vector<std::unique_ptr<Subprocess>> agents_;
};

// How many times `needle` occurs in `text` (for counting fields in benchctl's JSON).
int CountOccurrences(const std::string& text, const std::string& needle);

}  // namespace bench::testing
