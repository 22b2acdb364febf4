// Straggler attribution (issue 26 item 2; the method and its thresholds in
// docs/diagnosis.md): which ranks of a multi-rank job computed slower than the job's median
// rank, in which iterations, and how much time the job lost to them.
//
// The measured window: the iterations (warm-up excluded) that every rank stored. Per rank
// and iteration the ratio r = compute / median over ranks of that iteration's compute
// (IterationTiming::ComputeSeconds). Slow phases are found per rank by binary segmentation
// of r with a mean-shift test (kMinPhaseIterations, kShiftSigmas), each boundary placed by
// least squares; a phase counts when its mean excess (mean r - 1) is at least
// max(kMinExcess, kNoiseSigmas * sigma / sqrt(n)), n the phase's length and sigma the
// rank's own noise, 1.4826 * MAD of its successive differences of r / sqrt(2) (robust: a
// level shift moves one difference, not the spread). Adjacent slow segments form one phase.
//
// Lost time: per iteration of any slow phase, the largest (compute - median compute) over
// the ranks slow there (the others wait for the slowest in the all-reduce); summed, and as
// a fraction of the window's total step time (per iteration the median over ranks of the
// step time). The order-statistics jitter (every iteration's slowest rank is above the
// median by chance alone) is no straggler's: it is reported apart (jitter_s) and never
// counted as lost time.
//
// Pure and deterministic (inputs.h's contract).
#pragma once

#include <string>
#include <vector>

#include "server/diagnosis/inputs.h"

namespace bench::diagnosis {

inline constexpr double kMinExcess = 0.05;     // a phase's mean excess counts from 5 %
inline constexpr double kNoiseSigmas = 4.0;    // ... and from 4 sigma/sqrt(n) of its rank's noise
inline constexpr int kMinPhaseIterations = 5;  // shorter phases are not told apart from noise
inline constexpr double kShiftSigmas = 5.0;    // segmentation: a split's t-like statistic bound

// One slow phase of one rank: its first and last iteration (inclusive).
struct SlowPhase {
  int first_iteration = 0;
  int last_iteration = 0;
  double mean_excess = 0;  // mean of (compute / median compute - 1) over the phase
  double lost_s = 0;       // sum over the phase of (this rank's compute - median compute)

  bool operator==(const SlowPhase& o) const;
};

struct Straggler {
  int rank = 0;
  std::string node;
  int gpu_index = -1;  // -1: a CPU slot
  std::string gpu_uuid;
  std::vector<SlowPhase> phases;  // by first_iteration
  double mean_excess = 0;         // over all its phases' iterations
  double lost_s = 0;              // sum of its phases' lost_s

  bool operator==(const Straggler& o) const;
};

struct StragglerReport {
  // False for a job of one rank, or without a common measured iteration; then `reason`
  // says why and every figure below is 0.
  bool applicable = false;
  std::string reason;
  int ranks = 0;
  int iterations = 0;  // the measured window: iterations every rank stored
  int first_iteration = 0;
  int last_iteration = 0;
  std::vector<Straggler> stragglers;  // by rank; empty: no straggler
  double lost_s = 0;                  // the job's time lost to its stragglers
  double lost_fraction = 0;           // lost_s / window_step_time_s
  double window_step_time_s = 0;      // sum over the window of the median rank's step time
  // Order-statistics jitter, not lost time: sum over the window's iterations outside every
  // slow phase of (slowest rank's compute - median compute).
  double jitter_s = 0;

  bool operator==(const StragglerReport& o) const;
};

StragglerReport FindStragglers(const JobInputs& job);

}  // namespace bench::diagnosis
