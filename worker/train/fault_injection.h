// Fault injection for tests and demonstrations (bench-train --fault-scenario FILE; off
// by default; docs/trainer-events.md): this rank's rules of a fault scenario file
// (common/fault_scenario.h), looked up per iteration by the training loop.
//
//   extra_compute=P%  the iteration's forward and backward take P % longer: on the CPU
//                     the host clock busy-waits, after backward, P % of the forward and
//                     backward time it measured (training_loop.h)
//   data_stall_s=S    the iteration waits S seconds more for its batch (a sleep inside
//                     the data fetch, so data_time_s shows it)
//
// Iterations are the `iter` events' (1-based, warm-up included). Where rules overlap,
// the later one's value wins for each of the two. Torch-free; the CPU only (bench-train
// refuses --fault-scenario with a CUDA device).
#ifndef BENCHFLEET_WORKER_TRAIN_FAULT_INJECTION_H_
#define BENCHFLEET_WORKER_TRAIN_FAULT_INJECTION_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "worker/train/status.h"

namespace bench_train {

struct RankFaultRule {
  int64_t first_iteration = 0;          // inclusive
  int64_t last_iteration = 0;           // inclusive
  std::optional<double> extra_compute;  // a fraction: 0.08 for 8 %
  std::optional<double> data_stall_s;
};

struct RankFaults {
  std::vector<RankFaultRule> rules;  // in the file's order

  bool empty() const { return rules.empty(); }
  double ExtraCompute(int64_t iteration) const;      // 0 where no rule says
  double DataStallSeconds(int64_t iteration) const;  // 0 where no rule says
};

// The rules of the scenario file at `path` for global rank `rank`. INVALID_ARGUMENT
// naming the file (and the line, for a malformed one) if it cannot be read or parsed.
StatusOr<RankFaults> LoadRankFaults(const std::string& path, int rank);

}  // namespace bench_train

#endif  // BENCHFLEET_WORKER_TRAIN_FAULT_INJECTION_H_
