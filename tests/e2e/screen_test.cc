// Fleet screening end to end (issue 26 item 4's acceptance), with no GPU and no libtorch:
// benchd, eight bench-agents of eight fake-NVML GPUs each (tests/fake_nvml, driven by one
// scenario file through FAKE_NVML_SCENARIO and FAKE_NVML_NODE), bench-sim-train as every
// rank's trainer (the same scenario through the agents' --fault-scenario), and benchctl.
// The scenario draws every GPU's silicon speed with an 8 % spread from its seed and plants
// five faults: slow silicon (speed 0.85), a hardware thermal slowdown (hw_thermal, SM clock
// 1200 of 1980 MHz), a power brake (hw_power_brake, SM clock 1100), a PCIe link at gen 3 of
// 5 and XID errors. `benchctl screen --wait` must exit 3 naming exactly those five GPUs,
// each with its cause, and no other; `screen --show` twice prints the same bytes.
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <utility>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "absl/strings/str_cat.h"
#include "benchfleet/v1/controller.pb.h"
#include "google/protobuf/util/json_util.h"
#include "tests/e2e/cluster.h"

namespace bench::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
namespace v1 = benchfleet::v1;

constexpr int kNodes = 8;
constexpr int kGpusPerNode = 8;

constexpr char kScenario[] = R"(benchfleet-scenario 1
seed 26
gpu node=* gpu=* speed_spread=8% sm_clock_mhz=1980 max_sm_clock_mhz=1980 memory_clock_mhz=2619 max_memory_clock_mhz=2619 power_w=450 power_limit_w=700 temperature_c=60 throttle=none pcie_gen=5 pcie_gen_max=5 pcie_width=16 pcie_width_max=16 ecc_corrected=0 ecc_uncorrected=0 xid_errors=0
# The five planted faults.
gpu node=n3 gpu=5 speed=0.85
gpu node=n1 gpu=2 throttle=hw_thermal sm_clock_mhz=1200 temperature_c=93
gpu node=n6 gpu=3 throttle=hw_power_brake sm_clock_mhz=1100
gpu node=n2 gpu=0 pcie_gen=3
gpu node=n4 gpu=7 xid_errors=3
)";

class ScreenTest : public ::testing::Test {
 protected:
  void SetUp() override {
    scenario_ = cluster_.dir() + "/scenario.txt";
    std::ofstream(scenario_) << kScenario;
    ASSERT_TRUE(cluster_.StartBenchd().ok()) << cluster_.Log("benchd.log");
    for (int n = 1; n <= kNodes; ++n) {
      const std::string name = absl::StrCat("n", n);
      absl::Status started =
          cluster_.StartAgent(name, 0,
                              {"--nvml-library", FAKE_NVML_LIBRARY, "--gpu-sample-hz", "10",
                               "--fault-scenario", scenario_},
                              {{"FAKE_NVML_GPUS", absl::StrCat(kGpusPerNode)},
                               {"FAKE_NVML_SCENARIO", scenario_},
                               {"FAKE_NVML_NODE", name},
                               {"FAKE_NVML_UUID_PREFIX", absl::StrCat("GPU-", name)},
                               {"FAKE_NVML_NAME", "NVIDIA H100 80GB HBM3 (fake)"}});
      ASSERT_TRUE(started.ok()) << started;
    }
    ASSERT_TRUE(cluster_.WaitForAgents(kNodes).ok()) << cluster_.Log("benchd.log");
  }

  v1::ScreeningReport ShowJson(const std::string& id) {
    CommandResult shown = cluster_.Benchctl({"screen", "--show", id, "--format", "json"});
    EXPECT_EQ(shown.exit_code, 3) << shown.output;
    v1::ScreeningReport report;
    auto parsed = google::protobuf::util::JsonStringToMessage(shown.stdout_text, &report);
    EXPECT_TRUE(parsed.ok()) << parsed << "\n" << shown.stdout_text;
    return report;
  }

  LoopbackCluster cluster_;
  std::string scenario_;
};

TEST_F(ScreenTest, NamesExactlyThePlantedFaultsWithTheirCauses) {
  // Short runs: 60 measured steps of the simulated 0.05 s (the sim's default).
  CommandResult screen = cluster_.Benchctl(
      {"screen", "--id", "acceptance", "--iters", "65", "--warmup", "5", "--wait"}, 600);
  ASSERT_EQ(screen.exit_code, 3) << screen.output << cluster_.Log("benchd.log");
  EXPECT_THAT(screen.stdout_text, HasSubstr("screening acceptance: 64 GPUs on 8 nodes, 5 flagged"));
  ASSERT_EQ(ShowJson("acceptance").configurations_size(), 1);  // one GPU model, one config

  const v1::ScreeningReport report = ShowJson("acceptance");
  EXPECT_EQ(report.jobs(), kNodes * kGpusPerNode);
  EXPECT_EQ(report.pending(), 0);
  ASSERT_EQ(report.gpus_size(), kNodes * kGpusPerNode);
  std::map<std::pair<std::string, int>, std::string> flagged;  // (node, gpu) -> first cause
  for (const v1::ScreeningGpuVerdict& gpu : report.gpus()) {
    EXPECT_FALSE(gpu.failed()) << gpu.node() << " " << gpu.gpu_index() << ": "
                               << gpu.failure_reason();
    if (!gpu.flagged()) continue;
    flagged[{gpu.node(), gpu.gpu_index()}] = gpu.causes().empty() ? "" : gpu.causes(0);
  }
  const std::map<std::pair<std::string, int>, std::string> planted = {
      {{"n3", 5}, "slow_at_full_clock"},
      {{"n1", 2}, "thermal"},
      {{"n6", 3}, "power_brake"},
      {{"n2", 0}, "pcie_link"},
      {{"n4", 7}, "xid_errors"}};
  EXPECT_EQ(flagged, planted) << screen.stdout_text;
  std::set<std::string> flagged_nodes;
  for (const v1::ScreeningNodeVerdict& node : report.nodes()) {
    if (!node.ok()) flagged_nodes.insert(node.node());
  }
  EXPECT_EQ(flagged_nodes, (std::set<std::string>{"n1", "n2", "n3", "n4", "n6"}));

  // The same analysis on the same stored data: the same bytes, twice.
  CommandResult first = cluster_.Benchctl({"screen", "--show", "acceptance"});
  CommandResult second = cluster_.Benchctl({"screen", "--show", "acceptance"});
  EXPECT_EQ(first.exit_code, 3) << first.output;
  EXPECT_EQ(first.stdout_text, second.stdout_text);
  EXPECT_EQ(first.stdout_text, screen.stdout_text.substr(screen.stdout_text.find('\n') + 1));

  // A retried screen with the same id submits nothing twice.
  CommandResult again =
      cluster_.Benchctl({"screen", "--id", "acceptance", "--iters", "65", "--warmup", "5"});
  EXPECT_EQ(again.exit_code, 0) << again.output;
  EXPECT_THAT(again.output, Not(HasSubstr("  new\n")));
  EXPECT_EQ(ShowJson("acceptance").jobs(), kNodes * kGpusPerNode);
}

}  // namespace
}  // namespace bench::testing
