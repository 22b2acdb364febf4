#include "server/diagnosis/stragglers.h"

#include <tuple>

namespace bench::diagnosis {

bool SlowPhase::operator==(const SlowPhase& o) const {
  return std::tie(first_iteration, last_iteration, mean_excess, lost_s) ==
         std::tie(o.first_iteration, o.last_iteration, o.mean_excess, o.lost_s);
}

bool Straggler::operator==(const Straggler& o) const {
  return std::tie(rank, node, gpu_index, gpu_uuid, phases, mean_excess, lost_s) ==
         std::tie(o.rank, o.node, o.gpu_index, o.gpu_uuid, o.phases, o.mean_excess, o.lost_s);
}

bool StragglerReport::operator==(const StragglerReport& o) const {
  return std::tie(applicable, reason, ranks, iterations, first_iteration, last_iteration,
                  stragglers, lost_s, lost_fraction, window_step_time_s,
                  jitter_s) == std::tie(o.applicable, o.reason, o.ranks, o.iterations,
                                        o.first_iteration, o.last_iteration, o.stragglers, o.lost_s,
                                        o.lost_fraction, o.window_step_time_s, o.jitter_s);
}

}  // namespace bench::diagnosis
