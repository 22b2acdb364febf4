// The simulated data-parallel step (bench-sim-train, docs/diagnosis.md "Simulated
// devices"): a pure function from a fault scenario, the ranks' places and an iteration to
// every rank's split of that step. Every rank computes every rank's times, so ranks agree.
//
// For rank r in iteration i at time t (seconds on the scenario's GPU-rule clock):
//   speed            = SpeedOf(node, gpu, t) x (sm_clock / max_sm_clock where the GPU
//                      rules set both at t, else 1)
//   forward_backward = step_s / speed x (1 + extra_compute) x (1 + noise), noise a draw
//                      fixed by (seed, r, i), uniform in [-noise/2, +noise/2]
//   data             = kDataS + data_stall_s
//   ready            = data + forward_backward
//   all-reduce end   = max over ranks of ready + comm (comm = kCommFraction x step_s;
//                      none, and no wait, for a single rank)
//   allreduce_wait   = all-reduce end - ready
//   optimizer        = kOptimizerFraction x step_s
//   step             = all-reduce end + optimizer, the same for every rank
// Standard library and common/fault_scenario.h only.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/fault_scenario.h"

namespace bench::sim {

inline constexpr double kDataS = 0.0002;            // the batch is always ready
inline constexpr double kCommFraction = 0.04;       // the all-reduce itself
inline constexpr double kOptimizerFraction = 0.02;  // the optimizer step

// Where a rank runs: its node's name (BENCH_NODE_NAME) and its GPU index there.
struct RankPlace {
  std::string node;
  int gpu = 0;
};

struct SimParams {
  double step_s = 0.05;          // nominal forward+backward time of one step (--sim-step-s)
  double noise_fraction = 0.01;  // width of the noise draw (--sim-noise 1% -> 0.01)
};

// One rank's share of one iteration, in seconds.
struct RankStep {
  double data_s = 0;
  double forward_backward_s = 0;
  double allreduce_wait_s = 0;
  double optimizer_s = 0;
  double step_s = 0;  // the same for every rank of the iteration
  double compute_s() const { return step_s - data_s; }
};

// The noise draw of rank `rank` in iteration `iteration`: uniform in [-width/2, +width/2],
// fixed by (seed, rank, iteration).
double NoiseDraw(uint64_t seed, int rank, int iteration, double width);

// The speed of a GPU at time t (see above): silicon speed times its clock ratio.
double EffectiveSpeed(const FaultScenario& scenario, const RankPlace& place, double t_s);

// Every rank's step in iteration `iteration` (1-based), ranks in order of `places`
// (index = global rank), with GPU rules read at `t_s`.
std::vector<RankStep> SimulateIteration(const FaultScenario& scenario,
                                        const std::vector<RankPlace>& places,
                                        const SimParams& params, int iteration, double t_s);

}  // namespace bench::sim
