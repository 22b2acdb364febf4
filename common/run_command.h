// Runs a short command to completion and keeps what it printed (stdout and stderr apart),
// killing it past a deadline: benchd's Slurm allocator runs sbatch, scontrol and scancel
// this way.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace bench {

struct CommandOutput {
  int exit_code = 0;  // as Subprocess::Wait: -N when signal N killed it
  std::string stdout_text;
  std::string stderr_text;
};

// UNAVAILABLE naming argv[0] when the program cannot be started, or when it runs past
// `timeout` (its process group is then SIGKILLed). Each stream keeps its first
// `max_output_bytes`; the rest is read and dropped.
absl::StatusOr<CommandOutput> RunCommand(const std::vector<std::string>& argv,
                                         absl::Duration timeout,
                                         size_t max_output_bytes = size_t{1} << 20);

}  // namespace bench
