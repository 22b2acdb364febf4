// The Nvml session against tests/fake_nvml driven by a scenario file (FAKE_NVML_SCENARIO,
// FAKE_NVML_NODE; common/fault_scenario.h): the GPU rules of this node override the
// environment's values over time, XIDs the rules add arrive as events, and a malformed
// file fails nvmlInit_v2 with the parser's error. Rule times are placed with the file's
// `epoch` line, so that no test waits for a rule to begin.
#include <stdlib.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>

#include <gtest/gtest.h>

#include "worker/agent/nvml.h"
#include "worker/agent/temp_dir.h"

namespace bench::agent {
namespace {

class ScopedEnv {
 public:
  ScopedEnv(const char* name, const std::string& value) : name_(name) {
    setenv(name, value.c_str(), 1);
  }
  ~ScopedEnv() { unsetenv(name_); }

 private:
  const char* name_;
};

double NowUnixSeconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// Writes `text` to `path` whole (a rename, so that a reader never sees half a file).
void WriteFile(const std::string& path, const std::string& text) {
  std::ofstream(path + ".tmp") << text;
  ASSERT_EQ(std::rename((path + ".tmp").c_str(), path.c_str()), 0) << path;
}

class NvmlScenarioTest : public ::testing::Test {
 protected:
  TempDir dir_{"nvml_scenario_"};
  const std::string path_ = dir_.path() + "/faults.scenario";
};

TEST_F(NvmlScenarioTest, ThisNodesActiveRulesOverrideTheEnvironment) {
  // Now is 100 s after the epoch: rules from 50 s on apply, the one from 1000 s does not.
  WriteFile(path_,
            "benchfleet-scenario 1\n"
            "epoch " +
                std::to_string(NowUnixSeconds() - 100) +
                "\n"
                "gpu node=* gpu=* power_limit_w=700 power_w=690 throttle=sw_power_cap\n"
                "gpu node=n1 gpu=1 from=50 to=end throttle=hw_thermal sm_clock_mhz=1200 "
                "temperature_c=93\n"
                "gpu node=n1 gpu=0 from=50 pcie_gen=3 pcie_gen_max=5 pcie_width=8 "
                "pcie_width_max=16 ecc_corrected=7 ecc_uncorrected=2 xid_errors=3\n"
                "gpu node=n1 gpu=0 from=1000 pcie_gen=1\n"
                "gpu node=n2 gpu=* sm_clock_mhz=100 xid_errors=50\n");
  ScopedEnv scenario("FAKE_NVML_SCENARIO", path_);
  ScopedEnv node("FAKE_NVML_NODE", "n1");
  auto nvml = Nvml::Open(FAKE_NVML_LIBRARY);
  ASSERT_TRUE(nvml.ok()) << nvml.status();

  GpuReading gpu0 = (*nvml)->Read(0);
  EXPECT_EQ(gpu0.pcie_gen, 3);
  EXPECT_EQ(gpu0.pcie_gen_max, 5);
  EXPECT_EQ(gpu0.pcie_width, 8);
  EXPECT_EQ(gpu0.pcie_width_max, 16);
  EXPECT_EQ(gpu0.ecc_corrected, 7);
  EXPECT_EQ(gpu0.ecc_uncorrected, 2);
  EXPECT_EQ(gpu0.xid_errors, 3);
  EXPECT_EQ(gpu0.power_w, 690.0);  // every GPU's rule
  EXPECT_EQ(gpu0.power_limit_w, 700.0);
  EXPECT_EQ(gpu0.throttle_reasons, 0x4u);
  EXPECT_EQ(gpu0.sm_clock_mhz, 1980.0);  // no rule: the environment's default
  EXPECT_EQ(gpu0.max_sm_clock_mhz, 1980.0);

  GpuReading gpu1 = (*nvml)->Read(1);
  EXPECT_EQ(gpu1.throttle_reasons, 0x40u);  // the later rule wins, field by field
  EXPECT_EQ(gpu1.sm_clock_mhz, 1200.0);
  EXPECT_EQ(gpu1.max_sm_clock_mhz, 1755.0);  // the environment's: below it, thermal
  EXPECT_EQ(gpu1.temperature_c, 93.0);
  EXPECT_EQ(gpu1.power_w, 690.0);
  EXPECT_EQ(gpu1.pcie_gen, 4);
  EXPECT_EQ(gpu1.xid_errors, 0);
}

TEST_F(NvmlScenarioTest, ARewrittenFileTakesEffectAndItsNewXidsArriveAsEvents) {
  const double epoch = NowUnixSeconds() - 100;
  auto file = [&](const std::string& rules) {
    return "benchfleet-scenario 1\nepoch " + std::to_string(epoch) + "\n" + rules;
  };
  WriteFile(path_, file("gpu node=n1 gpu=1 xid_errors=1\n"));
  ScopedEnv scenario("FAKE_NVML_SCENARIO", path_);
  ScopedEnv node("FAKE_NVML_NODE", "n1");
  auto nvml = Nvml::Open(FAKE_NVML_LIBRARY);
  ASSERT_TRUE(nvml.ok()) << nvml.status();
  EXPECT_EQ((*nvml)->Read(1).xid_errors, 1);
  EXPECT_EQ((*nvml)->Read(1).pcie_gen, 4);

  // A test that plants a fault inside a running job rewrites the file.
  WriteFile(path_, file("gpu node=n1 gpu=1 xid_errors=4 pcie_width=4\n"));
  GpuReading later = (*nvml)->Read(1);
  EXPECT_EQ(later.xid_errors, 4);
  EXPECT_EQ(later.pcie_width, 4);
  // A rewrite that does not parse keeps the rules in force.
  WriteFile(path_, file("gpu node=n1 gpu=1 pcie_width=wide\n"));
  EXPECT_EQ((*nvml)->Read(1).pcie_width, 4);
}

TEST_F(NvmlScenarioTest, WithoutAnEpochTimesCountFromTheFirstRead) {
  // A rule from an hour on has not begun; one from 0 s has.
  WriteFile(path_,
            "benchfleet-scenario 1\n"
            "gpu node=n1 gpu=0 pcie_gen=2\n"
            "gpu node=n1 gpu=0 from=3600 pcie_gen=1 xid_errors=5\n");
  ScopedEnv scenario("FAKE_NVML_SCENARIO", path_);
  ScopedEnv node("FAKE_NVML_NODE", "n1");
  auto nvml = Nvml::Open(FAKE_NVML_LIBRARY);
  ASSERT_TRUE(nvml.ok()) << nvml.status();
  GpuReading reading = (*nvml)->Read(0);
  EXPECT_EQ(reading.pcie_gen, 2);
  EXPECT_EQ(reading.xid_errors, 0);
}

TEST_F(NvmlScenarioTest, AnotherNodesRulesDoNotApply) {
  WriteFile(path_, "benchfleet-scenario 1\ngpu node=n2 gpu=* pcie_gen=1 xid_errors=2\n");
  ScopedEnv scenario("FAKE_NVML_SCENARIO", path_);
  ScopedEnv node("FAKE_NVML_NODE", "n1");
  auto nvml = Nvml::Open(FAKE_NVML_LIBRARY);
  ASSERT_TRUE(nvml.ok()) << nvml.status();
  EXPECT_EQ((*nvml)->Read(0).pcie_gen, 4);
  EXPECT_EQ((*nvml)->Read(0).xid_errors, 0);
}

TEST_F(NvmlScenarioTest, AMalformedScenarioFailsInitNamingFileAndLine) {
  WriteFile(path_, "benchfleet-scenario 1\ngpu node=n1 gpu=0 pcie_gen=three\n");
  ScopedEnv scenario("FAKE_NVML_SCENARIO", path_);
  auto nvml = Nvml::Open(FAKE_NVML_LIBRARY);
  ASSERT_FALSE(nvml.ok());
  EXPECT_EQ(nvml.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_NE(nvml.status().message().find(path_ + ": line 2"), std::string::npos) << nvml.status();

  ScopedEnv missing("FAKE_NVML_SCENARIO", dir_.path() + "/none.scenario");
  nvml = Nvml::Open(FAKE_NVML_LIBRARY);
  ASSERT_FALSE(nvml.ok());
  EXPECT_NE(nvml.status().message().find("none.scenario"), std::string::npos) << nvml.status();
}

}  // namespace
}  // namespace bench::agent
