#include "worker/sim/sim_model.h"

#include <algorithm>

namespace bench::sim {
namespace {

// SplitMix64's finaliser: a well-mixed 64-bit value from any input.
uint64_t Mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

}  // namespace

double NoiseDraw(uint64_t seed, int rank, int iteration, double width) {
  uint64_t h = Mix(seed ^ 0x51ed270b27a1f3c5ULL);
  h = Mix(h ^ static_cast<uint64_t>(static_cast<uint32_t>(rank)));
  h = Mix(h ^ (static_cast<uint64_t>(static_cast<uint32_t>(iteration)) << 32));
  const double unit = static_cast<double>(h >> 11) / static_cast<double>(1ULL << 53);  // [0,1)
  return (unit - 0.5) * width;
}

double EffectiveSpeed(const FaultScenario& scenario, const RankPlace& place, double t_s) {
  double speed = scenario.SpeedOf(place.node, place.gpu, t_s);
  const GpuState state = scenario.GpuAt(place.node, place.gpu, t_s);
  if (state.sm_clock_mhz && state.max_sm_clock_mhz && *state.max_sm_clock_mhz > 0) {
    speed *= *state.sm_clock_mhz / *state.max_sm_clock_mhz;
  }
  return speed;
}

std::vector<RankStep> SimulateIteration(const FaultScenario& scenario,
                                        const std::vector<RankPlace>& places,
                                        const SimParams& params, int iteration, double t_s) {
  std::vector<RankStep> steps(places.size());
  std::vector<double> ready(places.size());
  double slowest = 0;
  for (size_t r = 0; r < places.size(); ++r) {
    const int rank = static_cast<int>(r);
    const RankEffect effect = scenario.RankAt(rank, iteration);
    double speed = EffectiveSpeed(scenario, places[r], t_s);
    if (!(speed > 0)) speed = 1e-6;  // a stopped GPU: very slow, never a division by 0
    RankStep& step = steps[r];
    step.data_s = kDataS + effect.data_stall_s;
    step.forward_backward_s =
        params.step_s / speed * (1 + effect.extra_compute_fraction) *
        (1 + NoiseDraw(scenario.seed(), rank, iteration, params.noise_fraction));
    ready[r] = step.data_s + step.forward_backward_s;
    slowest = std::max(slowest, ready[r]);
  }
  const double comm = places.size() > 1 ? kCommFraction * params.step_s : 0;
  const double optimizer = kOptimizerFraction * params.step_s;
  for (size_t r = 0; r < places.size(); ++r) {
    RankStep& step = steps[r];
    step.allreduce_wait_s = places.size() > 1 ? slowest + comm - ready[r] : 0;
    step.optimizer_s = optimizer;
    step.step_s = slowest + comm + optimizer;
  }
  return steps;
}

}  // namespace bench::sim
