#include "worker/train/fault_injection.h"

namespace bench_train {
namespace {

template <typename Field>
double Lookup(const std::vector<RankFaultRule>& rules, int64_t iteration, Field field) {
  double value = 0;
  for (const RankFaultRule& rule : rules) {
    if (iteration < rule.first_iteration || iteration > rule.last_iteration) continue;
    if (const std::optional<double>& set = rule.*field) value = *set;
  }
  return value;
}

}  // namespace

double RankFaults::ExtraCompute(int64_t iteration) const {
  return Lookup(rules, iteration, &RankFaultRule::extra_compute);
}

double RankFaults::DataStallSeconds(int64_t iteration) const {
  return Lookup(rules, iteration, &RankFaultRule::data_stall_s);
}

}  // namespace bench_train
