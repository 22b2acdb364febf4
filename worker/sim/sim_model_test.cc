#include "worker/sim/sim_model.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace bench::sim {
namespace {

FaultScenario Scenario(const std::string& rules) {
  std::string error;
  auto scenario = FaultScenario::Parse("benchfleet-scenario 1\nseed 7\n" + rules, &error);
  EXPECT_TRUE(scenario.has_value()) << error;
  return scenario.value_or(*FaultScenario::Parse("benchfleet-scenario 1\n", &error));
}

std::vector<RankPlace> FourRanks() { return {{"n1", 0}, {"n1", 1}, {"n2", 0}, {"n2", 1}}; }

SimParams Quiet() {
  SimParams params;
  params.step_s = 0.1;
  params.noise_fraction = 0;
  return params;
}

TEST(SimModelTest, PlantedExtraComputeShowsInThatRankAndInEveryOtherRanksWait) {
  const FaultScenario clean = Scenario("");
  const FaultScenario planted = Scenario("rank rank=2 iterations=5-10 extra_compute=8%\n");
  const SimParams params = Quiet();
  const auto before = SimulateIteration(planted, FourRanks(), params, 4, 0);
  const auto during = SimulateIteration(planted, FourRanks(), params, 7, 0);
  const auto baseline = SimulateIteration(clean, FourRanks(), params, 7, 0);
  const double comm = kCommFraction * params.step_s;
  EXPECT_DOUBLE_EQ(during[2].forward_backward_s, 0.1 * 1.08);
  EXPECT_DOUBLE_EQ(during[2].allreduce_wait_s, comm);  // the slowest waits for comm only
  for (int r : {0, 1, 3}) {
    EXPECT_DOUBLE_EQ(during[r].forward_backward_s, 0.1) << r;
    EXPECT_NEAR(during[r].allreduce_wait_s - baseline[r].allreduce_wait_s, 0.1 * 0.08, 1e-12) << r;
    EXPECT_DOUBLE_EQ(before[r].allreduce_wait_s, comm) << r;  // outside the range: no fault
  }
  for (int r = 0; r < 4; ++r) {
    EXPECT_DOUBLE_EQ(during[r].step_s, during[0].step_s);  // one step for every rank
    EXPECT_NEAR(during[r].data_s + during[r].forward_backward_s + during[r].allreduce_wait_s +
                    during[r].optimizer_s,
                during[r].step_s, 1e-12);
  }
  EXPECT_NEAR(during[0].step_s - baseline[0].step_s, 0.1 * 0.08, 1e-12);
}

TEST(SimModelTest, ExtraComputeIsExactWithNoiseToo) {
  SimParams params;  // 1 % noise
  const auto clean = SimulateIteration(Scenario(""), FourRanks(), params, 50, 0);
  const auto planted = SimulateIteration(
      Scenario("rank rank=1 iterations=40-60 extra_compute=8%\n"), FourRanks(), params, 50, 0);
  EXPECT_NEAR(planted[1].forward_backward_s / clean[1].forward_backward_s, 1.08, 1e-12);
  EXPECT_DOUBLE_EQ(planted[0].forward_backward_s, clean[0].forward_backward_s);
}

TEST(SimModelTest, SameSeedSameNumbersAnotherSeedOtherNoise) {
  SimParams params;
  params.noise_fraction = 0.05;
  const auto places = FourRanks();
  for (int i = 1; i <= 20; ++i) {
    const auto a = SimulateIteration(Scenario(""), places, params, i, 1.5);
    const auto b = SimulateIteration(Scenario(""), places, params, i, 1.5);
    for (size_t r = 0; r < places.size(); ++r) {
      EXPECT_EQ(a[r].forward_backward_s, b[r].forward_backward_s);
      EXPECT_EQ(a[r].allreduce_wait_s, b[r].allreduce_wait_s);
      EXPECT_EQ(a[r].step_s, b[r].step_s);
    }
  }
  EXPECT_NE(NoiseDraw(7, 0, 1, 0.05), NoiseDraw(8, 0, 1, 0.05));
  EXPECT_NE(NoiseDraw(7, 0, 1, 0.05), NoiseDraw(7, 1, 1, 0.05));
  EXPECT_NE(NoiseDraw(7, 0, 1, 0.05), NoiseDraw(7, 0, 2, 0.05));
}

TEST(SimModelTest, NoiseStaysWithinItsWidthAndCentresOnZero) {
  double sum = 0;
  for (int i = 1; i <= 4000; ++i) {
    const double draw = NoiseDraw(42, i % 7, i, 0.02);
    ASSERT_GE(draw, -0.01);
    ASSERT_LT(draw, 0.01);
    sum += draw;
  }
  EXPECT_NEAR(sum / 4000, 0, 0.001);
  EXPECT_EQ(NoiseDraw(42, 3, 9, 0), 0);
}

TEST(SimModelTest, SlowSiliconIsOneOverItsSpeedSlower) {
  const FaultScenario scenario = Scenario("gpu node=n2 gpu=1 speed=0.85\n");
  const auto steps = SimulateIteration(scenario, FourRanks(), Quiet(), 3, 0);
  EXPECT_DOUBLE_EQ(steps[3].forward_backward_s, 0.1 / 0.85);
  EXPECT_DOUBLE_EQ(steps[2].forward_backward_s, 0.1);
  EXPECT_NEAR(steps[2].allreduce_wait_s - steps[3].allreduce_wait_s, 0.1 / 0.85 - 0.1, 1e-12);
}

TEST(SimModelTest, AClockBelowItsMaximumSlowsByTheRatioOnlyWhileTheRuleHolds) {
  const FaultScenario scenario = Scenario(
      "gpu node=n1 gpu=0 from=30 to=60 sm_clock_mhz=1200 max_sm_clock_mhz=1500 "
      "throttle=hw_thermal\n"
      "gpu node=n1 gpu=1 power_limit_w=700 power_w=690 throttle=sw_power_cap\n");
  const auto before = SimulateIteration(scenario, FourRanks(), Quiet(), 1, 10);
  const auto during = SimulateIteration(scenario, FourRanks(), Quiet(), 1, 45);
  EXPECT_DOUBLE_EQ(before[0].forward_backward_s, 0.1);
  EXPECT_DOUBLE_EQ(during[0].forward_backward_s, 0.1 / 0.8);
  // A power cap that does not lower the clock costs nothing.
  EXPECT_DOUBLE_EQ(during[1].forward_backward_s, 0.1);
  // Only one of the two clocks set: no ratio.
  const auto half = SimulateIteration(Scenario("gpu node=* gpu=* sm_clock_mhz=900\n"), FourRanks(),
                                      Quiet(), 1, 0);
  EXPECT_DOUBLE_EQ(half[0].forward_backward_s, 0.1);
}

TEST(SimModelTest, DataStallsAddToDataTimeAndSingleRankNeverWaits) {
  const FaultScenario scenario = Scenario("rank rank=* iterations=2-3 data_stall_s=0.2\n");
  const std::vector<RankPlace> one = {{"n1", 0}};
  const auto stalled = SimulateIteration(scenario, one, Quiet(), 2, 0);
  EXPECT_DOUBLE_EQ(stalled[0].data_s, kDataS + 0.2);
  EXPECT_EQ(stalled[0].allreduce_wait_s, 0);
  EXPECT_DOUBLE_EQ(stalled[0].step_s, kDataS + 0.2 + 0.1 + kOptimizerFraction * 0.1);
  EXPECT_DOUBLE_EQ(SimulateIteration(scenario, one, Quiet(), 4, 0)[0].data_s, kDataS);
}

TEST(SimModelTest, NaturalSpreadIsFixedPerGpuBySeed) {
  const FaultScenario scenario = Scenario("gpu node=* gpu=* speed_spread=8%\n");
  const auto a = SimulateIteration(scenario, FourRanks(), Quiet(), 1, 0);
  const auto b = SimulateIteration(scenario, FourRanks(), Quiet(), 99, 500);
  for (int r = 0; r < 4; ++r) {
    EXPECT_EQ(a[r].forward_backward_s, b[r].forward_backward_s) << r;
    EXPECT_GE(a[r].forward_backward_s, 0.1 / 1.04 - 1e-12) << r;
    EXPECT_LE(a[r].forward_backward_s, 0.1 / 0.96 + 1e-12) << r;
  }
}

}  // namespace
}  // namespace bench::sim
