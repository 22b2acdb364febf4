// The read side's shapes: what the controller answers about jobs and agents (a job's
// status with live progress, its stored iterations, an agent's state, a submit's
// outcome). Plain values, copied out from under the manager's lock; the RPC adapters
// map them to protos (proto_convert.h) and a JSON API may render them too.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "server/core/job.h"
#include "server/results/baseline.h"

namespace bench {

// A job as clients see it: the stored job plus live progress.
struct JobView {
  Job job;
  int queue_position = 0;   // QUEUED: 1 = next to be considered; 0 otherwise
  int iterations_done = 0;  // lowest count of stored iterations across ranks
  int64_t samples_stored = 0;
  // Current attempt, all ranks: stored iterations whose loss is NaN or infinite.
  int64_t nonfinite_losses = 0;
  std::optional<double> images_per_second;
  // images_per_second against its configuration's baseline (SUCCEEDED jobs with a
  // throughput whose configuration has one).
  std::optional<BaselineComparison> baseline;
};

// A job's status with its stored iterations (for logs).
struct SamplesView {
  JobView view;
  std::vector<IterationSample> samples;  // current attempt, by rank then iteration
};

struct AgentView {
  AgentInventory inventory;
  bool connected = false;
  absl::Time last_seen;
  int devices_busy = 0;
  std::vector<std::string> running_jobs;
};

struct SubmitResult {
  std::string job_id;
  bool existing = false;
};

}  // namespace bench
