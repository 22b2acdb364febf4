#include "worker/train/fault_injection.h"

#include <climits>
#include <string>

namespace bench_train {
namespace {

int AsInt(int64_t iteration) { return iteration > INT_MAX ? INT_MAX : static_cast<int>(iteration); }

}  // namespace

double RankFaults::ExtraCompute(int64_t iteration) const {
  if (empty()) return 0;
  return scenario_->RankAt(rank_, AsInt(iteration)).extra_compute_fraction;
}

double RankFaults::DataStallSeconds(int64_t iteration) const {
  if (empty()) return 0;
  return scenario_->RankAt(rank_, AsInt(iteration)).data_stall_s;
}

StatusOr<RankFaults> LoadRankFaults(const std::string& path, int rank) {
  std::string error;
  std::optional<bench::FaultScenario> scenario = bench::FaultScenario::Load(path, &error);
  if (!scenario) return InvalidArgumentError("--fault-scenario " + error);
  return RankFaults(std::move(*scenario), rank);
}

}  // namespace bench_train
