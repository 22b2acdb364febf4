#include "server/diagnosis/attribution.h"

#include <algorithm>
#include <random>

#include "gtest/gtest.h"
#include "server/diagnosis/diagnosis_test_support.h"

namespace bench::diagnosis {
namespace {

using testing::JobPlan;
using testing::MakeJob;

double RankCauseSeconds(const ExcessReport& report, int rank, Cause cause) {
  for (const RankCauseTime& t : report.by_rank) {
    if (t.rank == rank && t.cause == cause) return t.seconds;
  }
  return 0;
}

TEST(DiagnosisAttribution, AThermalThrottleTakesTheExcessOnItsGpu) {
  // 8 GPU ranks; rank 3's GPU at 1200 of 1980 MHz with hw_thermal over 100 iterations.
  JobPlan plan;
  plan.seed = 11;
  plan.ranks = 8;
  plan.gpu_events.push_back({3, 150, 249, kReasonHwThermal, 1200.0});
  const ExcessReport report = AttributeExcess(MakeJob(plan));
  ASSERT_TRUE(report.applicable) << report.reason;
  EXPECT_EQ(report.ideal_rule, kIdealRule);
  ASSERT_GT(report.excess_s, 0);
  EXPECT_GE(RankCauseSeconds(report, 3, Cause::kHwThermal) / report.excess_s, 0.95);
  EXPECT_GE(report.SecondsFor(Cause::kHwThermal) / report.excess_s, 0.95);
  EXPECT_NEAR(report.ThrottleSeconds(), report.SecondsFor(Cause::kHwThermal), 1e-12);
  // by_rank carries the GPU.
  const auto it = std::find_if(report.by_rank.begin(), report.by_rank.end(),
                               [](const RankCauseTime& t) { return t.cause == Cause::kHwThermal; });
  ASSERT_NE(it, report.by_rank.end());
  EXPECT_EQ(it->node, "n0");
  EXPECT_EQ(it->gpu_index, 3);
  EXPECT_EQ(it->gpu_uuid, "GPU-1003");
}

TEST(DiagnosisAttribution, APowerCapAtFullClockCostsNothing) {
  JobPlan plan;
  plan.seed = 12;
  plan.ranks = 4;
  plan.iterations = 200;
  plan.gpu_events.push_back({1, 0, 1000, kReasonSwPowerCap, std::nullopt});  // clock at max
  const ExcessReport report = AttributeExcess(MakeJob(plan));
  ASSERT_TRUE(report.applicable);
  EXPECT_EQ(report.SecondsFor(Cause::kPowerCap), 0);
  EXPECT_EQ(report.ThrottleSeconds(), 0);
  ASSERT_EQ(report.capped_without_cost.size(), 1u);
  EXPECT_EQ(report.capped_without_cost[0].rank, 1);
  EXPECT_EQ(report.capped_without_cost[0].iterations, 200);

  // The same cap lowering the clock is blamed.
  plan.gpu_events[0] = {1, 50, 149, kReasonSwPowerCap, 1500.0};
  const ExcessReport lowered = AttributeExcess(MakeJob(plan));
  EXPECT_GE(lowered.SecondsFor(Cause::kPowerCap) / lowered.excess_s, 0.9);
  EXPECT_GE(RankCauseSeconds(lowered, 1, Cause::kPowerCap) / lowered.excess_s, 0.9);
}

TEST(DiagnosisAttribution, ADataStallIsDataWait) {
  JobPlan plan;
  plan.seed = 13;
  plan.ranks = 1;
  plan.iterations = 300;
  plan.data_stalls.push_back({-1, 50, 69, 0.5});
  ExcessReport report = AttributeExcess(MakeJob(plan));
  ASSERT_TRUE(report.applicable);
  EXPECT_GE(report.SecondsFor(Cause::kDataWait) / report.excess_s, 0.95);
  EXPECT_EQ(report.ThrottleSeconds(), 0);

  // One rank of eight stalls: data wait, on that rank.
  plan.ranks = 8;
  plan.data_stalls[0].rank = 5;
  report = AttributeExcess(MakeJob(plan));
  EXPECT_GE(RankCauseSeconds(report, 5, Cause::kDataWait) / report.excess_s, 0.95);
}

TEST(DiagnosisAttribution, ALowClockWithoutAReasonIsSaidSo) {
  JobPlan plan;
  plan.seed = 14;
  plan.ranks = 2;
  plan.iterations = 300;
  plan.gpu_events.push_back({0, 100, 159, 0, 1400.0});
  const ExcessReport report = AttributeExcess(MakeJob(plan));
  EXPECT_GE(report.SecondsFor(Cause::kClockBelowMax) / report.excess_s, 0.9);
}

TEST(DiagnosisAttribution, AStragglerWithoutTelemetryIsWaitingForThatRank) {
  JobPlan plan;
  plan.seed = 15;
  plan.ranks = 8;
  plan.gpu = false;  // CPU slots: no readings
  plan.extra_compute.push_back({6, 100, 199, 0.3});
  const ExcessReport report = AttributeExcess(MakeJob(plan));
  EXPECT_GE(RankCauseSeconds(report, 6, Cause::kWaitingForRank) / report.excess_s, 0.8);
  EXPECT_EQ(report.ThrottleSeconds(), 0);

  // A single rank slower with nothing to show for it: unexplained.
  plan.ranks = 1;
  plan.extra_compute[0].rank = 0;
  const ExcessReport single = AttributeExcess(MakeJob(plan));
  EXPECT_GE(single.SecondsFor(Cause::kUnexplained) / single.excess_s, 0.8);
  EXPECT_EQ(single.SecondsFor(Cause::kWaitingForRank), 0);
}

TEST(DiagnosisAttribution, TheIdealStepIsTheMeanOfStepsUpToMedianPlusThreeMads) {
  JobInputs job;
  job.ranks.resize(1);
  const double steps[] = {1.0, 1.1, 0.9, 1.0, 1.0, 4.0, 1.05};
  int i = 0;
  for (double s : steps) {
    IterationTiming it;
    it.iteration = i++;
    it.step_time_s = s;
    it.data_time_s = 0;
    job.ranks[0].iterations.push_back(it);
  }
  const ExcessReport report = AttributeExcess(job);
  ASSERT_TRUE(report.applicable);
  EXPECT_DOUBLE_EQ(report.median_step_s, 1.0);
  EXPECT_NEAR(report.mad_step_s, 0.05, 1e-12);
  // 4.0 is above 1.0 + 3 * 0.05: left out of the ideal.
  EXPECT_DOUBLE_EQ(report.ideal_step_s, (1.0 + 1.1 + 0.9 + 1.0 + 1.0 + 1.05) / 6);
  const double ideal = report.ideal_step_s;
  EXPECT_NEAR(report.excess_s, (1.1 - ideal) + (4.0 - ideal) + (1.05 - ideal), 1e-12);
  EXPECT_NEAR(report.total_step_s, 10.05, 1e-12);
  double sum = 0;
  for (const CauseTime& c : report.by_cause) sum += c.seconds;
  EXPECT_NEAR(sum, report.excess_s, 1e-12);  // every second of excess has a cause
}

TEST(DiagnosisAttribution, NoIterationIsNotApplicableAndReorderingChangesNothing) {
  EXPECT_FALSE(AttributeExcess(JobInputs{}).applicable);
  EXPECT_EQ(AttributeExcess(JobInputs{}).reason, "no rank reported an iteration");

  JobPlan plan;
  plan.seed = 16;
  plan.ranks = 6;
  plan.iterations = 200;
  plan.gpu_events.push_back({2, 40, 80, kReasonHwPowerBrake, 900.0});
  const JobInputs job = MakeJob(plan);
  const ExcessReport report = AttributeExcess(job);
  EXPECT_EQ(AttributeExcess(job), report);
  JobInputs shuffled = job;
  std::mt19937_64 rng(7);
  std::shuffle(shuffled.ranks.begin(), shuffled.ranks.end(), rng);
  for (RankInputs& rank : shuffled.ranks) {
    std::shuffle(rank.iterations.begin(), rank.iterations.end(), rng);
    std::shuffle(rank.readings.begin(), rank.readings.end(), rng);
  }
  EXPECT_EQ(AttributeExcess(shuffled), report);
  EXPECT_GE(RankCauseSeconds(report, 2, Cause::kHwPowerBrake) / report.excess_s, 0.9);
}

}  // namespace
}  // namespace bench::diagnosis
