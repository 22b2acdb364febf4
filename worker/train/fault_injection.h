// Fault injection for tests and demonstrations (bench-train --fault-scenario FILE; off
// by default; docs/trainer-events.md): this rank's rules of a fault scenario file
// (common/fault_scenario.h, which parses it), looked up per iteration by the training loop.
//
//   extra_compute=P%  the iteration's forward and backward take P % longer: on the CPU
//                     the host clock busy-waits, after backward, P % of the forward and
//                     backward time it measured (training_loop.h)
//   data_stall_s=S    the iteration waits S seconds more for its batch (a sleep inside
//                     the data fetch, so data_time_s shows it)
//
// Iterations are the `iter` events' (1-based, warm-up included); where rules overlap the
// later one wins (FaultScenario::RankAt). The GPU rules are the fake NVML's and are not
// read here. Torch-free; the CPU only (bench-train refuses --fault-scenario on CUDA).
#ifndef BENCHFLEET_WORKER_TRAIN_FAULT_INJECTION_H_
#define BENCHFLEET_WORKER_TRAIN_FAULT_INJECTION_H_

#include <cstdint>
#include <optional>
#include <string>
#include <utility>

#include "common/fault_scenario.h"
#include "worker/train/status.h"

namespace bench_train {

class RankFaults {
 public:
  RankFaults() = default;  // none: every lookup is 0
  // Global rank `rank`'s rules of `scenario`.
  RankFaults(bench::FaultScenario scenario, int rank)
      : scenario_(std::move(scenario)), rank_(rank) {}

  bool empty() const { return !scenario_ || !scenario_->has_rank_rules(); }
  double ExtraCompute(int64_t iteration) const;  // a fraction: 0.5 for 50 %
  double DataStallSeconds(int64_t iteration) const;

 private:
  std::optional<bench::FaultScenario> scenario_;
  int rank_ = 0;
};

// The scenario file at `path` for global rank `rank`. INVALID_ARGUMENT naming the file
// (and the line, for a malformed one) when it cannot be read or parsed.
StatusOr<RankFaults> LoadRankFaults(const std::string& path, int rank);

}  // namespace bench_train

#endif  // BENCHFLEET_WORKER_TRAIN_FAULT_INJECTION_H_
