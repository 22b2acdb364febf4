#include "server/diagnosis/checks.h"

#include <algorithm>

#include "gtest/gtest.h"
#include "server/diagnosis/diagnosis_test_support.h"

namespace bench::diagnosis {
namespace {

using testing::JobPlan;
using testing::MakeJob;

const Check& Named(const std::vector<Check>& checks, const std::string& name) {
  for (const Check& c : checks) {
    if (c.name == name) return c;
  }
  static const Check none;
  ADD_FAILURE() << "no check " << name;
  return none;
}

JobPlan SmallPlan(uint64_t seed) {
  JobPlan plan;
  plan.seed = seed;
  plan.ranks = 4;
  plan.iterations = 200;
  return plan;
}

TEST(DiagnosisChecks, ACleanGpuJobPassesEveryCheckInOrder) {
  const std::vector<Check> checks = RunChecks(MakeJob(SmallPlan(21)));
  std::vector<std::string> names;
  for (const Check& c : checks) names.push_back(c.name);
  EXPECT_EQ(names, (std::vector<std::string>{kCheckSteadyTrend, kCheckSteadyCv, kCheckPrecision,
                                             kCheckSkippedSteps, kCheckTelemetry, kCheckThrottling,
                                             kCheckSameIterations}));
  for (const Check& c : checks) {
    EXPECT_EQ(c.outcome, CheckOutcome::kPass) << c.name << ": " << c.detail;
  }
  EXPECT_TRUE(ChecksPass(checks));
  EXPECT_LT(*Named(checks, kCheckSteadyCv).figure, 3.0);
  EXPECT_NEAR(*Named(checks, kCheckTelemetry).figure, 0.1, 0.05);  // 10 Hz readings
}

TEST(DiagnosisChecks, ADriftingWindowIsNotSteady) {
  JobInputs job = MakeJob(SmallPlan(22));
  for (RankInputs& rank : job.ranks) {
    for (IterationTiming& it : rank.iterations) it.step_time_s *= 1 + 0.0005 * it.iteration;
  }
  const std::vector<Check> checks = RunChecks(job);
  const Check& trend = Named(checks, kCheckSteadyTrend);
  EXPECT_EQ(trend.outcome, CheckOutcome::kFail) << trend.detail;
  EXPECT_GT(*trend.figure, 5.0);
  EXPECT_EQ(*trend.bound, kTrendBoundPct);
  EXPECT_EQ(trend.unit, "%");
  EXPECT_FALSE(ChecksPass(checks));
}

TEST(DiagnosisChecks, ANoisyWindowFailsTheCvBound) {
  JobPlan plan = SmallPlan(23);
  plan.noise = 0.25;
  plan.ranks = 1;
  const Check cv = Named(RunChecks(MakeJob(plan)), kCheckSteadyCv);
  EXPECT_EQ(cv.outcome, CheckOutcome::kFail) << cv.detail;
  EXPECT_GT(*cv.figure, kCvBoundPct);
}

TEST(DiagnosisChecks, PrecisionInEffectMustBeTheOneAsked) {
  JobInputs job = MakeJob(SmallPlan(24));
  job.requested_precision = Precision::kTf32;
  job.effective_precision = Precision::kFp32;
  Check precision = Named(RunChecks(job), kCheckPrecision);
  EXPECT_EQ(precision.outcome, CheckOutcome::kFail);
  EXPECT_EQ(precision.detail, "fp32 in effect, tf32 asked");
  EXPECT_FALSE(precision.figure.has_value());
  job.effective_precision = Precision::kUnspecified;
  precision = Named(RunChecks(job), kCheckPrecision);
  EXPECT_EQ(precision.outcome, CheckOutcome::kNotApplicable);
}

TEST(DiagnosisChecks, SkippedStepsAboveTheBoundFail) {
  JobInputs job = MakeJob(SmallPlan(25));  // 202 iterations run: bound 16 + 2.02
  job.skipped_steps = 18;
  Check skipped = Named(RunChecks(job), kCheckSkippedSteps);
  EXPECT_EQ(skipped.outcome, CheckOutcome::kPass) << skipped.detail;
  EXPECT_NEAR(*skipped.bound, 18.02, 1e-9);
  job.skipped_steps = 19;
  skipped = Named(RunChecks(job), kCheckSkippedSteps);
  EXPECT_EQ(skipped.outcome, CheckOutcome::kFail);
  EXPECT_EQ(skipped.detail, "19 of 202 steps skipped for a gradient overflow");
  job.skipped_steps.reset();
  EXPECT_EQ(Named(RunChecks(job), kCheckSkippedSteps).outcome, CheckOutcome::kNotApplicable);
}

TEST(DiagnosisChecks, TelemetryGapsAndSilentGpusFailAndCpuSlotsAreNotApplicable) {
  JobInputs job = MakeJob(SmallPlan(26));
  // Rank 2's GPU silent for 3 s in the middle of the window.
  auto& readings = job.ranks[2].readings;
  const int64_t middle = readings[readings.size() / 2].time_unix_ns;
  readings.erase(std::remove_if(readings.begin(), readings.end(),
                                [&](const GpuReading& r) {
                                  return r.time_unix_ns > middle &&
                                         r.time_unix_ns < middle + 3'000'000'000;
                                }),
                 readings.end());
  Check telemetry = Named(RunChecks(job), kCheckTelemetry);
  EXPECT_EQ(telemetry.outcome, CheckOutcome::kFail) << telemetry.detail;
  EXPECT_NEAR(*telemetry.figure, 3.0, 0.11);
  EXPECT_NE(telemetry.detail.find("rank 2 (n0 GPU 2)"), std::string::npos) << telemetry.detail;

  job = MakeJob(SmallPlan(26));
  for (GpuReading& r : job.ranks[1].readings) {
    r.sm_clock_mhz = 0;
    r.power_w = 0;
  }
  telemetry = Named(RunChecks(job), kCheckTelemetry);
  EXPECT_EQ(telemetry.outcome, CheckOutcome::kFail);
  EXPECT_EQ(telemetry.detail, "no readings, or only zeros, from rank 1 (n0 GPU 1)");

  JobPlan cpu = SmallPlan(26);
  cpu.gpu = false;
  EXPECT_EQ(Named(RunChecks(MakeJob(cpu)), kCheckTelemetry).outcome, CheckOutcome::kNotApplicable);
}

TEST(DiagnosisChecks, ThrottledClocksFail) {
  JobPlan plan = SmallPlan(27);
  plan.gpu_events.push_back({0, 60, 90, kReasonSwThermal, 1300.0});
  const JobInputs job = MakeJob(plan);
  const ExcessReport excess = AttributeExcess(job);
  const std::vector<Check> checks = RunChecks(job, excess);
  EXPECT_EQ(checks, RunChecks(job));
  const Check& throttling = Named(checks, kCheckThrottling);
  EXPECT_EQ(throttling.outcome, CheckOutcome::kFail) << throttling.detail;
  // Rank 0's GPU held at 1300 MHz over 31 of 200 iterations, each 1980/1300 longer: about
  // 21 % of its readings.
  EXPECT_GT(*throttling.figure, 10.0) << throttling.detail;
  EXPECT_LT(*throttling.figure, 30.0) << throttling.detail;
}

// A GPU throttled through the whole window is as slow in every step, so no step is slower
// than the job's ideal and no excess is blamed on it; its clocks were throttled all the same.
TEST(DiagnosisChecks, AGpuThrottledThroughTheWholeWindowFails) {
  JobPlan plan = SmallPlan(29);
  plan.gpu_events.push_back({2, -10, 100000, kReasonHwPowerBrake, 1100.0});
  const JobInputs job = MakeJob(plan);
  EXPECT_LT(AttributeExcess(job).ThrottleSeconds(), 0.01 * testing::WindowStepSeconds(job));
  const Check throttling = Named(RunChecks(job), kCheckThrottling);
  EXPECT_EQ(throttling.outcome, CheckOutcome::kFail) << throttling.detail;
  EXPECT_GT(*throttling.figure, 95.0) << throttling.detail;
  EXPECT_NE(throttling.detail.find("rank 2"), std::string::npos) << throttling.detail;

  // A power cap at full clock is no throttled clock.
  JobPlan capped = SmallPlan(29);
  capped.gpu_events.push_back({2, -10, 100000, kReasonSwPowerCap, std::nullopt});
  EXPECT_EQ(Named(RunChecks(MakeJob(capped)), kCheckThrottling).outcome, CheckOutcome::kPass);
}

TEST(DiagnosisChecks, EveryRankMustStoreTheSameIterations) {
  JobInputs job = MakeJob(SmallPlan(28));
  job.ranks[3].iterations.erase(job.ranks[3].iterations.begin() + 100);
  Check same = Named(RunChecks(job), kCheckSameIterations);
  EXPECT_EQ(same.outcome, CheckOutcome::kFail);
  EXPECT_EQ(*same.figure, 1);
  EXPECT_EQ(same.detail, "1 of 4 ranks lack some of the 200 measured iterations");

  // Every rank short of what was asked: missing too.
  job = MakeJob(SmallPlan(28));
  job.iterations_asked += 10;
  same = Named(RunChecks(job), kCheckSameIterations);
  EXPECT_EQ(same.outcome, CheckOutcome::kFail);
  EXPECT_EQ(*same.figure, 40);
}

}  // namespace
}  // namespace bench::diagnosis
