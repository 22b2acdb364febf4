#include "server/diagnosis/checks.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <tuple>
#include <utility>

#include "absl/strings/str_format.h"
#include "server/diagnosis/robust_stats.h"
#include "server/diagnosis/window.h"

namespace bench::diagnosis {
namespace {

Check Make(const char* name, CheckOutcome outcome, std::optional<double> figure,
           std::optional<double> bound, std::string unit, std::string detail) {
  Check check;
  check.name = name;
  check.outcome = outcome;
  check.figure = figure;
  check.bound = bound;
  check.unit = std::move(unit);
  check.detail = std::move(detail);
  return check;
}

Check NotApplicable(const char* name, std::string why) {
  return Make(name, CheckOutcome::kNotApplicable, std::nullopt, std::nullopt, "", std::move(why));
}

CheckOutcome PassIf(bool pass) { return pass ? CheckOutcome::kPass : CheckOutcome::kFail; }

// The job's step per common measured iteration: the median over ranks.
std::vector<double> JobSteps(const std::vector<PreparedRank>& ranks,
                             const std::vector<int>& window) {
  std::vector<double> steps;
  steps.reserve(window.size());
  std::vector<double> column(ranks.size());
  for (int iteration : window) {
    for (size_t r = 0; r < ranks.size(); ++r) {
      column[r] = FindIteration(ranks[r], iteration)->step_time_s;
    }
    steps.push_back(MedianOf(column));
  }
  return steps;
}

std::vector<Check> SteadyChecks(const std::vector<PreparedRank>& ranks,
                                const std::vector<int>& window) {
  if (window.size() < 3) {
    const std::string why = "fewer than 3 measured iterations common to every rank";
    return {NotApplicable(kCheckSteadyTrend, why), NotApplicable(kCheckSteadyCv, why)};
  }
  const std::vector<double> steps = JobSteps(ranks, window);
  const double median = MedianOf(steps);
  std::vector<double> x(window.begin(), window.end());
  const double slope = TheilSenSlope(x, steps);
  const double span = static_cast<double>(window.back() - window.front());
  const double trend_pct = median > 0 ? 100 * std::fabs(slope) * span / median : 0;
  Check trend =
      Make(kCheckSteadyTrend, PassIf(trend_pct < kTrendBoundPct), trend_pct, kTrendBoundPct, "%",
           absl::StrFormat("step time drifts %.2f %% of its median %.4f s over "
                           "iterations %d-%d (Theil-Sen slope %.3g s/iteration)",
                           trend_pct, median, window.front(), window.back(), slope));
  double sum = 0;
  for (double s : steps) sum += s;
  const double mean = sum / static_cast<double>(steps.size());
  double squares = 0;
  for (double s : steps) squares += (s - mean) * (s - mean);
  const double sd = std::sqrt(squares / static_cast<double>(steps.size() - 1));
  const double cv_pct = mean > 0 ? 100 * sd / mean : 0;
  Check cv = Make(kCheckSteadyCv, PassIf(cv_pct < kCvBoundPct), cv_pct, kCvBoundPct, "%",
                  absl::StrFormat("step time %.4f s +- %.4f s over %d iterations", mean, sd,
                                  static_cast<int>(steps.size())));
  return {trend, cv};
}

Check PrecisionCheck(const JobInputs& job) {
  if (job.requested_precision == Precision::kUnspecified) {
    return NotApplicable(kCheckPrecision, "no precision was asked for");
  }
  if (job.effective_precision == Precision::kUnspecified) {
    return NotApplicable(kCheckPrecision, "the trainer reported no precision in effect");
  }
  const bool same = job.requested_precision == job.effective_precision;
  return Make(kCheckPrecision, PassIf(same), std::nullopt, std::nullopt, "",
              absl::StrFormat("%s in effect, %s asked", PrecisionText(job.effective_precision),
                              PrecisionText(job.requested_precision)));
}

Check SkippedStepsCheck(const JobInputs& job, const std::vector<PreparedRank>& ranks) {
  if (!job.skipped_steps) {
    return NotApplicable(kCheckSkippedSteps, "the trainer reported no skipped steps");
  }
  int64_t run = job.iterations_asked;
  for (const PreparedRank& rank : ranks) {
    run = std::max<int64_t>(run, static_cast<int64_t>(rank.measured.size()) + job.warmup_asked);
  }
  const double bound = kSkippedStepsBase + 0.01 * static_cast<double>(run);
  const double skipped = static_cast<double>(*job.skipped_steps);
  return Make(
      kCheckSkippedSteps, PassIf(skipped <= bound), skipped, bound, "steps",
      absl::StrFormat("%d of %d steps skipped for a gradient overflow", *job.skipped_steps, run));
}

bool AllZero(const std::vector<GpuReading>& readings) {
  for (const GpuReading& r : readings) {
    if ((r.sm_clock_mhz && *r.sm_clock_mhz != 0) || (r.power_w && *r.power_w != 0)) {
      return false;
    }
  }
  return true;
}

// The measured window on the rank's clock: its first measured iteration's start to its last
// one's end (iterations without an end time place no window); {0, 0} without one.
std::pair<int64_t, int64_t> WindowOf(const PreparedRank& rank) {
  int64_t from = 0, to = 0;
  for (const IterationTiming& it : rank.measured) {
    if (it.end_unix_ns == 0) continue;
    const int64_t start = it.end_unix_ns - static_cast<int64_t>(it.step_time_s * 1e9);
    from = from == 0 ? start : std::min(from, start);
    to = std::max(to, it.end_unix_ns);
  }
  return {from, to};
}

// A reading taken while a clock event held the SM clock down: a throttle reason that lowers
// clocks (power cap, thermal, power brake, hardware slowdown) with the SM clock below
// kThrottledClockRatio of its maximum; where the maximum is unknown, a thermal, power-brake
// or hardware-slowdown reason alone (a power cap at an unknown clock is not counted).
bool Throttled(const GpuReading& r) {
  const uint64_t reasons = r.throttle_reasons.value_or(0);
  constexpr uint64_t kForcing = kReasonHwSlowdown | kReasonSwThermal | kReasonHwThermal |
                                kReasonHwPowerBrake;
  if (r.sm_clock_mhz && r.max_sm_clock_mhz && *r.max_sm_clock_mhz > 0) {
    return (reasons & (kForcing | kReasonSwPowerCap)) != 0 &&
           *r.sm_clock_mhz < kThrottledClockRatio * *r.max_sm_clock_mhz;
  }
  return (reasons & kForcing) != 0;
}

Check TelemetryCheck(const JobInputs& job, const std::vector<PreparedRank>& ranks) {
  if (job.device_kind == DeviceKind::kCpu) {
    return NotApplicable(kCheckTelemetry, "CPU slots have no GPU telemetry");
  }
  double worst_gap_s = 0;
  std::string worst;
  std::vector<std::string> silent;  // GPUs with no reading or only zeros
  int gpus = 0;
  for (const PreparedRank& rank : ranks) {
    if (rank.gpu_index < 0) continue;
    ++gpus;
    const std::string who =
        absl::StrFormat("rank %d (%s GPU %d)", rank.rank, rank.node, rank.gpu_index);
    if (rank.readings.empty() || AllZero(rank.readings)) {
      silent.push_back(who);
      continue;
    }
    const auto [from, to] = WindowOf(rank);
    if (to == 0) continue;
    int64_t previous = from;
    int64_t gap = 0;
    for (const GpuReading& reading : rank.readings) {
      if (reading.time_unix_ns < from) continue;
      if (reading.time_unix_ns > to) break;
      gap = std::max(gap, reading.time_unix_ns - previous);
      previous = reading.time_unix_ns;
    }
    gap = std::max(gap, to - previous);
    const double gap_s = static_cast<double>(gap) / 1e9;
    if (gap_s > worst_gap_s) {
      worst_gap_s = gap_s;
      worst = who;
    }
  }
  if (gpus == 0) return NotApplicable(kCheckTelemetry, "no rank ran on a GPU");
  if (!silent.empty()) {
    std::string names;
    for (const std::string& s : silent) names += (names.empty() ? "" : ", ") + s;
    return Make(kCheckTelemetry, CheckOutcome::kFail, worst_gap_s, kTelemetryGapBoundS, "s",
                absl::StrFormat("no readings, or only zeros, from %s", names));
  }
  const bool pass = worst_gap_s <= kTelemetryGapBoundS;
  return Make(kCheckTelemetry, PassIf(pass), worst_gap_s, kTelemetryGapBoundS, "s",
              worst.empty() ? absl::StrFormat("readings from %d GPUs through the window", gpus)
                            : absl::StrFormat("longest stretch without a reading: %.2f s on %s",
                                              worst_gap_s, worst));
}

Check ThrottlingCheck(const ExcessReport& excess, const std::vector<PreparedRank>& ranks) {
  if (!excess.applicable || excess.total_step_s <= 0) {
    return NotApplicable(kCheckThrottling, "no measured iteration to attribute");
  }
  const double seconds = excess.ThrottleSeconds();
  const double excess_pct = 100 * seconds / excess.total_step_s;
  // The worst GPU's share of its window's readings taken with its clock held down: a GPU
  // throttled through the whole window costs no excess over the job's own ideal step (the
  // ideal is as slow), yet its clocks were throttled.
  double worst_pct = 0;
  std::string worst;
  for (const PreparedRank& rank : ranks) {
    const auto [from, to] = WindowOf(rank);
    if (rank.gpu_index < 0 || to == 0) continue;
    int in_window = 0, throttled = 0;
    for (const GpuReading& reading : rank.readings) {
      if (reading.time_unix_ns < from || reading.time_unix_ns > to) continue;
      ++in_window;
      throttled += Throttled(reading) ? 1 : 0;
    }
    if (in_window == 0) continue;
    const double pct = 100.0 * throttled / in_window;
    if (pct > worst_pct) {
      worst_pct = pct;
      worst = absl::StrFormat("rank %d (%s GPU %d)", rank.rank, rank.node, rank.gpu_index);
    }
  }
  const bool pass = worst_pct < kThrottledReadingsBoundPct && excess_pct < kThrottleBoundPct;
  return Make(kCheckThrottling, PassIf(pass), worst_pct, kThrottledReadingsBoundPct, "%",
              absl::StrFormat("%s; %.3f s of %.3f s measured lost to clock events (%.2f %%, "
                              "bound %.0f %%)",
                              worst.empty() ? std::string("no reading with a throttled clock")
                                            : absl::StrFormat("%.1f %% of the readings of %s "
                                                              "with a throttled clock",
                                                              worst_pct, worst),
                              seconds, excess.total_step_s, excess_pct, kThrottleBoundPct));
}

Check SameIterationsCheck(const JobInputs& job, const std::vector<PreparedRank>& ranks) {
  if (ranks.empty()) return NotApplicable(kCheckSameIterations, "no rank reported an iteration");
  std::vector<int> all;
  for (const PreparedRank& rank : ranks) {
    for (const IterationTiming& it : rank.measured) all.push_back(it.iteration);
  }
  std::sort(all.begin(), all.end());
  all.erase(std::unique(all.begin(), all.end()), all.end());
  const int64_t asked = std::max(0, job.iterations_asked - job.warmup_asked);
  const int64_t target = std::max<int64_t>(static_cast<int64_t>(all.size()), asked);
  int64_t missing = 0;
  int short_ranks = 0;
  for (const PreparedRank& rank : ranks) {
    const int64_t lack = target - static_cast<int64_t>(rank.measured.size());
    missing += lack;
    if (lack > 0) ++short_ranks;
  }
  return Make(kCheckSameIterations, PassIf(missing == 0), static_cast<double>(missing), 0.0,
              "pairs",
              absl::StrFormat("%d of %d ranks lack some of the %d measured iterations", short_ranks,
                              static_cast<int>(ranks.size()), target));
}

}  // namespace

std::vector<Check> RunChecks(const JobInputs& job, const ExcessReport& excess) {
  const std::vector<PreparedRank> ranks = PrepareRanks(job);
  const std::vector<int> window = CommonIterations(ranks);
  std::vector<Check> checks = SteadyChecks(ranks, window);
  checks.push_back(PrecisionCheck(job));
  checks.push_back(SkippedStepsCheck(job, ranks));
  checks.push_back(TelemetryCheck(job, ranks));
  checks.push_back(ThrottlingCheck(excess, ranks));
  checks.push_back(SameIterationsCheck(job, ranks));
  return checks;
}

std::vector<Check> RunChecks(const JobInputs& job) { return RunChecks(job, AttributeExcess(job)); }

const char* CheckOutcomeName(CheckOutcome outcome) {
  switch (outcome) {
    case CheckOutcome::kPass: return "pass";
    case CheckOutcome::kFail: return "fail";
    case CheckOutcome::kNotApplicable: return "not_applicable";
  }
  return "not_applicable";
}

bool Check::operator==(const Check& o) const {
  return std::tie(name, outcome, figure, bound, unit, detail) ==
         std::tie(o.name, o.outcome, o.figure, o.bound, o.unit, o.detail);
}

bool ChecksPass(const std::vector<Check>& checks) {
  for (const Check& c : checks) {
    if (c.outcome == CheckOutcome::kFail) return false;
  }
  return true;
}

}  // namespace bench::diagnosis
