// One rank of a simulated job (bench-sim-train): meets its peers, then walks the shared
// schedule iteration by iteration, computing every rank's step with sim_model.h, sleeping
// until its own iteration's absolute end, and writing bench-train's events. GPU rules are
// read at the iteration's start, in seconds since the scenario's epoch (else since the
// job's common start); the scenario file is re-read when its modification time changes.
// Standard library and POSIX only.
#pragma once

#include <ostream>
#include <string>

#include "worker/sim/sim_flags.h"

namespace bench::sim {

// torchrun's environment and the node's name (common/trainer_contract.h).
struct SimEnv {
  int rank = 0;
  int world_size = 1;
  int local_rank = 0;
  std::string master_addr = "127.0.0.1";
  int master_port = 29500;
  std::string node;  // BENCH_NODE_NAME, else the host name
};

// From the process's environment; false with *error naming a malformed variable.
bool SimEnvFromEnvironment(SimEnv* env, std::string* error);

// Runs the rank, writing its events (one line each, flushed) to `events`. Returns the exit
// status: 0, 1 for a failure (an error event names it: a peer that did not come, an
// unreadable scenario).
int RunSimRank(const SimOptions& options, const SimEnv& env, std::ostream& events);

}  // namespace bench::sim
