// Excess-time attribution by cause (issue 26 item 3; the rules in docs/diagnosis.md): how
// much of a job's measured time went above its ideal step time, and why.
//
// The job's step time of an iteration: the median over ranks of the ranks' step times (a
// synchronous job's ranks end each step together). The ideal step time is Google's goodput
// definition: the mean of the measured steps at or below median + 3 * MAD (kIdealRule).
// An iteration's excess = step - ideal where positive, split in this order, each part
// taking at most what is left of it:
//   1. data wait: the largest over ranks of (data time - that rank's median data time);
//   2. the critical rank's (the one with the largest compute) compute above the job's
//      typical compute (the median over ranks and iterations), blamed on its GPU's readings
//      that overlap the iteration [end - step, end] (or the nearest within kNearestReadingNs
//      when none does): hw_thermal, sw_thermal, hw_power_brake, hw_slowdown, then
//      sw_power_cap, each only while the SM clock is below its maximum (kClockBelowMaxRatio);
//      "clock below maximum, no reason given" when it is lower without a reason; when the
//      readings show nothing (or a CPU slot): "waiting for another rank" on that rank in a
//      multi-rank job, unexplained in a single-rank one;
//   3. all-reduce wait above typical (median over ranks of allreduce_wait - its median over
//      the window) not explained above: "waiting for another rank" (communication);
//   4. the rest: unexplained.
// A power cap (sw_power_cap) seen while the clock is at its maximum costs nothing: it is
// listed in `capped_without_cost`, never blamed.
//
// Pure and deterministic (inputs.h's contract).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "server/diagnosis/inputs.h"

namespace bench::diagnosis {

inline constexpr char kIdealRule[] =
    "ideal step time = mean of the measured steps <= median + 3 * MAD (Google's goodput)";
inline constexpr int64_t kNearestReadingNs = 100'000'000;  // 100 ms
// The SM clock is "below its maximum" under 99 % of it (NVML's clock steps are ~15 MHz).
inline constexpr double kClockBelowMaxRatio = 0.99;

// The causes, in the order of the report (and of the tie-breaks inside).
enum class Cause {
  kDataWait,
  kHwThermal,
  kSwThermal,
  kHwPowerBrake,
  kHwSlowdown,
  kPowerCap,
  kClockBelowMax,   // clock below its maximum, no reason given
  kWaitingForRank,  // another rank (straggler) or the communication
  kUnexplained,
};
// "data_wait", "hw_thermal", "sw_thermal", "hw_power_brake", "hw_slowdown", "power_cap",
// "clock_below_max", "waiting_for_rank", "unexplained": stable names for JSON and text.
const char* CauseName(Cause cause);
// For people: "data wait", "hardware thermal", ..., "clock below maximum, no reason given".
const char* CauseDescription(Cause cause);
// True for the causes a GPU's clock events explain (thermal, power brake, slowdown, power
// cap, clock below maximum): what the checks call throttling.
bool IsThrottleCause(Cause cause);

struct CauseTime {
  Cause cause = Cause::kUnexplained;
  double seconds = 0;
  double fraction = 0;  // of the job's excess_s

  bool operator==(const CauseTime& o) const;
};

// Time blamed on one rank (its node and GPU) for one cause.
struct RankCauseTime {
  int rank = 0;
  std::string node;
  int gpu_index = -1;  // -1: a CPU slot
  std::string gpu_uuid;
  Cause cause = Cause::kUnexplained;
  double seconds = 0;
  double fraction = 0;  // of the job's excess_s

  bool operator==(const RankCauseTime& o) const;
};

// A rank whose GPU was power capped (sw_power_cap) at full clock: reported, not blamed.
struct CappedWithoutCost {
  int rank = 0;
  std::string node;
  int gpu_index = -1;
  std::string gpu_uuid;
  int iterations = 0;  // measured iterations it overlapped

  bool operator==(const CappedWithoutCost& o) const;
};

struct ExcessReport {
  // False without a measured iteration; then `reason` says why and the figures are 0.
  bool applicable = false;
  std::string reason;
  std::string ideal_rule = kIdealRule;
  int iterations = 0;  // measured iterations (the job's steps)
  double median_step_s = 0;
  double mad_step_s = 0;
  double ideal_step_s = 0;
  double total_step_s = 0;          // sum of the job's measured steps
  double excess_s = 0;              // sum of the positive (step - ideal)
  double excess_fraction = 0;       // excess_s / total_step_s
  std::vector<CauseTime> by_cause;  // causes with time, in Cause order
  // Causes a rank (and so a node and GPU) carries, by (rank, cause): data wait on the rank
  // that waited, GPU causes and "waiting for another rank" on the critical rank.
  std::vector<RankCauseTime> by_rank;
  std::vector<CappedWithoutCost> capped_without_cost;  // by rank

  // The seconds blamed on `cause` (0 when absent), and those of the throttle causes.
  double SecondsFor(Cause cause) const;
  double ThrottleSeconds() const;

  bool operator==(const ExcessReport& o) const;
};

ExcessReport AttributeExcess(const JobInputs& job);

}  // namespace bench::diagnosis
