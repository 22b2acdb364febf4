// The checks every finished job carries (issue 26 item 5; each bound and why in
// docs/diagnosis.md): named checks, each with its figure, its bound and pass, fail or not
// applicable. A job passes when no check fails.
//
//   steady_trend     |Theil-Sen slope of the job's step time| * window / median step, in %;
//                    fails at >= kTrendBoundPct (the window drifts: warm-up too short,
//                    thermal soak, a leak).
//   steady_cv        the job's step-time coefficient of variation over the window, in %;
//                    fails at >= kCvBoundPct.
//   precision        the precision in effect equals the one asked for (no figure); not
//                    applicable when none was asked or the trainer reported none.
//   skipped_steps    overflow-skipped steps; fails above kSkippedStepsBase + 1 % of the
//                    iterations run (warm-up included); not applicable when unreported.
//   telemetry        the longest stretch of the window without a reading of some GPU, in
//                    s (fails above kTelemetryGapBoundS), or a GPU whose series is all zero
//                    or empty; not applicable on CPU slots.
//   throttling       the worst GPU's share of its window's readings taken with a clock
//                    event holding its SM clock below kThrottledClockRatio of its maximum,
//                    in %; fails at >= kThrottledReadingsBoundPct, or when the excess time
//                    blamed on clock events (attribution.h) is >= kThrottleBoundPct of the
//                    measured time. Not applicable without a measured iteration.
//   same_iterations  (rank, iteration) pairs of the window missing on some rank (the
//                    window: the union of the ranks' measured iterations, at least the
//                    iterations asked); fails above 0.
//
// Pure and deterministic (inputs.h's contract).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "server/diagnosis/attribution.h"
#include "server/diagnosis/inputs.h"

namespace bench::diagnosis {

inline constexpr char kCheckSteadyTrend[] = "steady_trend";
inline constexpr char kCheckSteadyCv[] = "steady_cv";
inline constexpr char kCheckPrecision[] = "precision";
inline constexpr char kCheckSkippedSteps[] = "skipped_steps";
inline constexpr char kCheckTelemetry[] = "telemetry";
inline constexpr char kCheckThrottling[] = "throttling";
inline constexpr char kCheckSameIterations[] = "same_iterations";

inline constexpr double kTrendBoundPct = 5.0;
inline constexpr double kCvBoundPct = 10.0;
inline constexpr int kSkippedStepsBase = 16;
inline constexpr double kTelemetryGapBoundS = 2.0;
inline constexpr double kThrottleBoundPct = 1.0;
inline constexpr double kThrottledReadingsBoundPct = 5.0;
inline constexpr double kThrottledClockRatio = 0.99;

enum class CheckOutcome { kPass, kFail, kNotApplicable };
// "pass", "fail", "not_applicable".
const char* CheckOutcomeName(CheckOutcome outcome);

struct Check {
  std::string name;  // one of the kCheck* names
  CheckOutcome outcome = CheckOutcome::kNotApplicable;
  std::optional<double> figure;  // unset where the check has none (precision, n/a)
  std::optional<double> bound;
  std::string unit;    // "%", "s", "steps", "pairs", or "" without a figure
  std::string detail;  // one sentence for people: what was measured against what

  bool operator==(const Check& o) const;
};

// The checks in the order listed above. The throttling check reads `excess`, which must be
// AttributeExcess(job)'s report.
std::vector<Check> RunChecks(const JobInputs& job, const ExcessReport& excess);
// The same, attributing the excess itself.
std::vector<Check> RunChecks(const JobInputs& job);

// True when no check failed.
bool ChecksPass(const std::vector<Check>& checks);

}  // namespace bench::diagnosis
