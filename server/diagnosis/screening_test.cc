#include "server/diagnosis/screening.h"

#include <algorithm>
#include <random>

#include "gtest/gtest.h"
#include "server/diagnosis/diagnosis_test_support.h"

namespace bench::diagnosis {
namespace {

using testing::FleetPlan;
using testing::GpuAt;
using testing::MakeFleet;

const GpuVerdict& VerdictOf(const ScreeningReport& report, const std::string& node, int gpu) {
  for (const GpuVerdict& v : report.gpus) {
    if (v.node == node && v.gpu_index == gpu) return v;
  }
  static const GpuVerdict none;
  ADD_FAILURE() << "no verdict for " << node << " GPU " << gpu;
  return none;
}

TEST(DiagnosisScreening, FindsTheFivePlantedFaultsAndNoHealthyGpu) {
  // The acceptance: 1,024 GPUs with a seeded 8 % natural spread (uniform +-4 %),
  // five faulty: slow silicon, thermal, power brake, PCIe downtrain, XID errors.
  FleetPlan plan;
  plan.seed = 1024;
  std::vector<ScreenedGpu> fleet = MakeFleet(plan);
  ASSERT_EQ(fleet.size(), 1024u);
  testing::PlantSlowSilicon(GpuAt(fleet, "n003", 5), 0.85);
  testing::PlantThrottle(GpuAt(fleet, "n017", 2), kReasonHwThermal, 1200);
  testing::PlantThrottle(GpuAt(fleet, "n042", 0), kReasonHwPowerBrake, 900);
  testing::PlantPcie(GpuAt(fleet, "n064", 7), 3, 5, 16, 16);
  testing::PlantXid(GpuAt(fleet, "n100", 4), 3);
  // A power cap at full clock on a healthy GPU is no fault.
  for (GpuReading& r : GpuAt(fleet, "n010", 1).readings) r.throttle_reasons = kReasonSwPowerCap;

  const ScreeningReport report = Screen(fleet);
  ASSERT_EQ(report.gpus.size(), 1024u);
  std::vector<std::string> flagged;
  for (const GpuVerdict& v : report.gpus) {
    if (v.flagged) flagged.push_back(v.node + "/" + std::to_string(v.gpu_index));
  }
  EXPECT_EQ(flagged, (std::vector<std::string>{"n003/5", "n017/2", "n042/0", "n064/7", "n100/4"}));
  EXPECT_TRUE(report.any_flagged);

  const GpuVerdict& silicon = VerdictOf(report, "n003", 5);
  EXPECT_TRUE(silicon.slow);
  EXPECT_FALSE(silicon.fault);
  EXPECT_NEAR(silicon.slow_pct, 100 * (1 / 0.85 - 1), 5);
  EXPECT_EQ(silicon.causes, std::vector<ScreenCause>{ScreenCause::kSlowAtFullClock});
  EXPECT_EQ(silicon.evidence, "no clock events; SM clock 1980 of 1980 MHz");

  const GpuVerdict& thermal = VerdictOf(report, "n017", 2);
  EXPECT_TRUE(thermal.slow);
  EXPECT_EQ(thermal.causes, std::vector<ScreenCause>{ScreenCause::kThermal});
  EXPECT_EQ(thermal.evidence, "thermal in 100 % of readings, SM clock 1200 of 1980 MHz");

  const GpuVerdict& brake = VerdictOf(report, "n042", 0);
  EXPECT_TRUE(brake.slow);
  EXPECT_EQ(brake.causes, std::vector<ScreenCause>{ScreenCause::kPowerBrake});

  const GpuVerdict& pcie = VerdictOf(report, "n064", 7);
  EXPECT_TRUE(pcie.fault);
  EXPECT_FALSE(pcie.slow);
  EXPECT_EQ(pcie.causes, std::vector<ScreenCause>{ScreenCause::kPcieLink});
  EXPECT_EQ(pcie.evidence, "PCIe gen 3 of 5, x16 of x16");

  const GpuVerdict& xid = VerdictOf(report, "n100", 4);
  EXPECT_TRUE(xid.fault);
  EXPECT_EQ(xid.causes, std::vector<ScreenCause>{ScreenCause::kXidErrors});
  EXPECT_EQ(xid.evidence, "3 XID errors");

  ASSERT_EQ(report.configurations.size(), 1u);
  const ConfigurationSummary& config = report.configurations[0];
  EXPECT_EQ(config.gpus, 1024);
  EXPECT_EQ(config.flagged, 5);
  EXPECT_NEAR(config.fleet_median_step_s, 0.1, 0.005);
  // Uniform +-4 %: MAD 2 %, x 1.4826 ~ 3 %; the threshold 3x that, above the spread's 4 %.
  EXPECT_NEAR(config.spread_mad_pct, 2.97, 0.4);
  EXPECT_GT(config.threshold_pct, 4.5);

  ASSERT_EQ(report.nodes.size(), 128u);
  int ok_nodes = 0;
  for (const NodeVerdict& node : report.nodes) {
    EXPECT_EQ(node.gpus, 8);
    if (node.ok) ++ok_nodes;
  }
  EXPECT_EQ(ok_nodes, 123);
  EXPECT_EQ(report.nodes[17].node, "n017");
  EXPECT_FALSE(report.nodes[17].ok);
  EXPECT_EQ(report.nodes[17].flagged_gpu_indexes, std::vector<int>{2});

  // A rerun, and the same GPUs in another order: identical verdicts.
  EXPECT_EQ(Screen(fleet), report);
  std::mt19937_64 rng(5);
  std::shuffle(fleet.begin(), fleet.end(), rng);
  EXPECT_EQ(Screen(fleet), report);
}

TEST(DiagnosisScreening, ACleanFleetHasNothingFlagged) {
  FleetPlan plan;
  plan.seed = 77;
  plan.nodes = 16;
  const ScreeningReport report = Screen(MakeFleet(plan));
  EXPECT_FALSE(report.any_flagged);
  for (const GpuVerdict& v : report.gpus) {
    EXPECT_FALSE(v.flagged) << v.node << "/" << v.gpu_index << " " << v.slow_pct;
    EXPECT_TRUE(v.causes.empty());
    EXPECT_EQ(v.evidence, "");
  }
  for (const NodeVerdict& node : report.nodes) EXPECT_TRUE(node.ok);
}

TEST(DiagnosisScreening, AFailedJobIsFlaggedAndAnIdleLinkIsNoFault) {
  FleetPlan plan;
  plan.seed = 78;
  plan.nodes = 4;
  std::vector<ScreenedGpu> fleet = MakeFleet(plan);
  ScreenedGpu& failed = GpuAt(fleet, "n002", 3);
  failed.succeeded = false;
  failed.failure_reason = "CUDA error: an illegal memory access was encountered";
  failed.step_times_s.clear();
  GpuAt(fleet, "n001", 0).step_times_s.clear();  // succeeded without a measured iteration
  // A link that drops to gen 1 between bursts but reaches gen 5: not downtrained.
  auto& readings = GpuAt(fleet, "n003", 6).readings;
  for (size_t i = 0; i < readings.size(); i += 2) readings[i].pcie_gen = 1;

  const ScreeningReport report = Screen(fleet);
  EXPECT_TRUE(report.any_flagged);
  const GpuVerdict& v = VerdictOf(report, "n002", 3);
  EXPECT_TRUE(v.failed);
  EXPECT_TRUE(v.flagged);
  EXPECT_FALSE(v.median_step_s.has_value());
  EXPECT_EQ(v.failure_reason, "CUDA error: an illegal memory access was encountered");
  EXPECT_EQ(VerdictOf(report, "n001", 0).failure_reason, "no measured iteration");
  EXPECT_FALSE(VerdictOf(report, "n003", 6).flagged);
  EXPECT_EQ(report.configurations[0].gpus, 30);  // medians of the 30 that measured
  EXPECT_EQ(report.configurations[0].flagged, 2);
}

TEST(DiagnosisScreening, ConfigurationsAreComparedApartAndLowMemoryClockIsACause) {
  FleetPlan plan;
  plan.seed = 79;
  plan.nodes = 4;
  std::vector<ScreenedGpu> fleet = MakeFleet(plan);
  // Node n003's GPUs ran another model, twice as slow: their own fleet, none slow.
  for (ScreenedGpu& g : fleet) {
    if (g.node != "n003") continue;
    g.configuration.model = "vit_b_16";
    for (double& s : g.step_times_s) s *= 2;
  }
  ScreenedGpu& memory = GpuAt(fleet, "n000", 1);
  for (double& s : memory.step_times_s) s *= 1.3;
  for (GpuReading& r : memory.readings) r.memory_clock_mhz = 1200;

  const ScreeningReport report = Screen(fleet);
  ASSERT_EQ(report.configurations.size(), 2u);
  EXPECT_EQ(report.configurations[0].configuration.model, "resnet50");
  EXPECT_EQ(report.configurations[1].configuration.model, "vit_b_16");
  EXPECT_NEAR(report.configurations[1].fleet_median_step_s, 0.2, 0.01);
  std::vector<std::string> flagged;
  for (const GpuVerdict& v : report.gpus) {
    if (v.flagged) flagged.push_back(v.node + "/" + std::to_string(v.gpu_index));
  }
  EXPECT_EQ(flagged, std::vector<std::string>{"n000/1"});
  EXPECT_EQ(VerdictOf(report, "n000", 1).causes,
            std::vector<ScreenCause>{ScreenCause::kLowMemoryClock});
  EXPECT_EQ(std::string(ScreenCauseName(ScreenCause::kLowMemoryClock)), "low_memory_clock");
}

}  // namespace
}  // namespace bench::diagnosis
