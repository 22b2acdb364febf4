#include "common/fault_scenario.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <string>

namespace bench {
namespace {

FaultScenario ParseOk(const std::string& text) {
  std::string error;
  std::optional<FaultScenario> scenario = FaultScenario::Parse(text, &error);
  EXPECT_TRUE(scenario.has_value()) << error;
  return scenario.value_or(FaultScenario());
}

std::string ParseError(const std::string& text) {
  std::string error;
  EXPECT_FALSE(FaultScenario::Parse(text, &error).has_value()) << text;
  return error;
}

TEST(FaultScenarioTest, GpuRulesApplyToTheirGpuAndTimeAndLaterRulesWin) {
  FaultScenario s = ParseOk(R"(# a comment
benchfleet-scenario 1
seed 7
gpu node=* gpu=* sm_clock_mhz=1980 max_sm_clock_mhz=1980 throttle=none
gpu node=n1 gpu=2 from=30 to=60 throttle=hw_thermal sm_clock_mhz=1200  # thermal
gpu node=n2 gpu=0 pcie_gen=3 pcie_gen_max=5 pcie_width=16 pcie_width_max=16
gpu node=n4 gpu=* xid_errors=3 ecc_uncorrected=2
)");
  EXPECT_EQ(s.seed(), 7u);
  EXPECT_FALSE(s.epoch_unix_s().has_value());
  EXPECT_EQ(ParseOk("benchfleet-scenario 1\nepoch 1795000000.5\n").epoch_unix_s(), 1795000000.5);
  GpuState before = s.GpuAt("n1", 2, 29.9);
  EXPECT_EQ(before.sm_clock_mhz, 1980);
  EXPECT_EQ(before.throttle_reasons, 0u);
  GpuState during = s.GpuAt("n1", 2, 45);
  EXPECT_EQ(during.sm_clock_mhz, 1200);
  EXPECT_EQ(during.max_sm_clock_mhz, 1980);
  EXPECT_EQ(during.throttle_reasons, throttle::kHwThermal);
  EXPECT_EQ(s.GpuAt("n1", 2, 60.1).sm_clock_mhz, 1980);
  EXPECT_EQ(s.GpuAt("n1", 3, 45).sm_clock_mhz, 1980);  // another GPU of the node
  GpuState link = s.GpuAt("n2", 0, 0);
  EXPECT_EQ(link.pcie_gen, 3);
  EXPECT_EQ(link.pcie_gen_max, 5);
  EXPECT_FALSE(s.GpuAt("n2", 1, 0).pcie_gen.has_value());
  EXPECT_EQ(s.GpuAt("n4", 6, 100).xid_errors, 3);
  EXPECT_EQ(s.GpuAt("n4", 6, 100).ecc_uncorrected, 2);
  EXPECT_FALSE(s.GpuAt("n4", 6, 100).ecc_corrected.has_value());
}

TEST(FaultScenarioTest, RankRulesCoverTheirIterationsOnly) {
  FaultScenario s = ParseOk(
      "benchfleet-scenario 1\n"
      "rank rank=5 iterations=200-300 extra_compute=8%\n"
      "rank rank=* iterations=50-60 data_stall_s=0.2\n"
      "rank rank=1 iterations=7 data_stall_s=1.5\n");
  EXPECT_EQ(s.RankAt(5, 199).extra_compute_fraction, 0);
  EXPECT_DOUBLE_EQ(s.RankAt(5, 200).extra_compute_fraction, 0.08);
  EXPECT_DOUBLE_EQ(s.RankAt(5, 300).extra_compute_fraction, 0.08);
  EXPECT_EQ(s.RankAt(5, 301).extra_compute_fraction, 0);
  EXPECT_EQ(s.RankAt(4, 250).extra_compute_fraction, 0);
  EXPECT_DOUBLE_EQ(s.RankAt(31, 55).data_stall_s, 0.2);
  EXPECT_EQ(s.RankAt(31, 61).data_stall_s, 0);
  EXPECT_DOUBLE_EQ(s.RankAt(1, 7).data_stall_s, 1.5);
  EXPECT_EQ(s.RankAt(1, 8).data_stall_s, 0);
}

TEST(FaultScenarioTest, NaturalSpreadIsFixedBySeedAndStaysInItsBand) {
  const std::string text =
      "benchfleet-scenario 1\nseed 42\ngpu node=* gpu=* speed_spread=8%\n"
      "gpu node=n3 gpu=5 speed=0.85\n";
  FaultScenario a = ParseOk(text), b = ParseOk(text);
  double low = 2, high = 0;
  for (int node = 0; node < 64; ++node) {
    for (int gpu = 0; gpu < 8; ++gpu) {
      std::string name = "n" + std::to_string(node);
      double speed = a.SpeedOf(name, gpu, 0);
      EXPECT_EQ(speed, b.SpeedOf(name, gpu, 0));  // the same draw in another process
      if (name == "n3" && gpu == 5) {
        EXPECT_GE(speed, 0.85 * 0.96);
        EXPECT_LE(speed, 0.85 * 1.04);
        continue;
      }
      low = std::min(low, speed);
      high = std::max(high, speed);
    }
  }
  EXPECT_GE(low, 0.96);
  EXPECT_LE(high, 1.04);
  EXPECT_GT(high - low, 0.07);  // 511 draws span most of the band
  FaultScenario other = ParseOk("benchfleet-scenario 1\nseed 43\ngpu node=* gpu=* speed_spread=8%\n");
  EXPECT_NE(other.SpeedOf("n0", 0, 0), a.SpeedOf("n0", 0, 0));
  EXPECT_EQ(ParseOk("benchfleet-scenario 1\n").SpeedOf("n0", 0, 0), 1.0);
}

TEST(FaultScenarioTest, ThrottleNamesRoundTrip) {
  EXPECT_EQ(ParseThrottleReasons("hw_thermal|sw_power_cap"),
            throttle::kHwThermal | throttle::kSwPowerCap);
  EXPECT_EQ(ThrottleReasonNames(throttle::kHwThermal | throttle::kSwPowerCap),
            "sw_power_cap|hw_thermal");
  EXPECT_EQ(ThrottleReasonNames(0), "none");
  EXPECT_EQ(ThrottleReasonNames(0x1000), "0x1000");
  EXPECT_FALSE(ParseThrottleReasons("hot").has_value());
  EXPECT_FALSE(ParseThrottleReasons("hw_thermal|").has_value());
}

TEST(FaultScenarioTest, MalformedScenariosAreRefusedNamingTheLine) {
  EXPECT_EQ(ParseError(""), "line 1: expected 'benchfleet-scenario 1' first");
  EXPECT_EQ(ParseError("gpu node=* gpu=*\n"), "line 1: expected 'benchfleet-scenario 1' first");
  EXPECT_EQ(ParseError("benchfleet-scenario 2\n"),
            "line 1: scenario format version 2 is not supported (1 is)");
  EXPECT_EQ(ParseError("benchfleet-scenario 1\n\ngpu node=n1 gpu=x\n"),
            "line 3: gpu=x: not a valid value");
  EXPECT_EQ(ParseError("benchfleet-scenario 1\ngpu node=n1 gpu=0 throttle=hot\n"),
            "line 2: throttle=hot: unknown reason (known: gpu_idle, applications_clocks, "
            "sw_power_cap, hw_slowdown, sync_boost, sw_thermal, hw_thermal, hw_power_brake, none)");
  EXPECT_EQ(ParseError("benchfleet-scenario 1\ngpu gpu=0 speed=1\n"),
            "line 2: gpu rule needs node= (a name or *)");
  EXPECT_EQ(ParseError("benchfleet-scenario 1\ngpu node=a gpu=0 from=10 to=5\n"),
            "line 2: to= is before from=");
  EXPECT_EQ(ParseError("benchfleet-scenario 1\nrank rank=1 extra_compute=0.08\n"),
            "line 2: extra_compute=0.08: a non-negative percentage, e.g. 8%");
  EXPECT_EQ(ParseError("benchfleet-scenario 1\nrank rank=1 iterations=9-3\n"),
            "line 2: iterations=9-3: A-B with 1 <= A <= B, A, or *");
  EXPECT_EQ(ParseError("benchfleet-scenario 1\nrank iterations=3\n"),
            "line 2: rank rule needs rank= (a global rank or *)");
  EXPECT_EQ(ParseError("benchfleet-scenario 1\nrank rank=1 color=red\n"),
            "line 2: rank rule: unknown key 'color'");
  EXPECT_EQ(ParseError("benchfleet-scenario 1\nrank rank=1 rank=2\n"), "line 2: 'rank' given twice");
  EXPECT_EQ(ParseError("benchfleet-scenario 1\nnode n1\n"),
            "line 2: unknown rule 'node' (gpu, rank, seed or epoch)");
  EXPECT_EQ(ParseError("benchfleet-scenario 1\nepoch soon\n"),
            "line 2: epoch takes a Unix time in seconds");
  EXPECT_EQ(ParseError("benchfleet-scenario 1\nseed -3\n"), "line 2: seed takes a non-negative integer");
}

TEST(FaultScenarioTest, LoadNamesTheFile) {
  std::string error;
  EXPECT_FALSE(FaultScenario::Load("/nonexistent/plan.txt", &error).has_value());
  EXPECT_EQ(error, "/nonexistent/plan.txt: cannot read");
  std::string path = testing::TempDir() + "fault_scenario_test.txt";
  {
    std::ofstream out(path);
    out << "benchfleet-scenario 1\nrank rank=0 iterations=1-2 data_stall_s=oops\n";
  }
  EXPECT_FALSE(FaultScenario::Load(path, &error).has_value());
  EXPECT_EQ(error, path + ": line 2: data_stall_s=oops: seconds, >= 0");
  {
    std::ofstream out(path);
    out << "benchfleet-scenario 1\nrank rank=0 iterations=1-2 data_stall_s=0.5\n";
  }
  std::optional<FaultScenario> loaded = FaultScenario::Load(path, &error);
  ASSERT_TRUE(loaded.has_value()) << error;
  EXPECT_DOUBLE_EQ(loaded->RankAt(0, 2).data_stall_s, 0.5);
  std::remove(path.c_str());
}

}  // namespace
}  // namespace bench
