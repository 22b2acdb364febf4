// The Nvml session against tests/fake_nvml (values scripted from the environment).
#include "worker/agent/nvml.h"

#include <stdlib.h>

#include <chrono>

#include <gtest/gtest.h>

#include "absl/time/clock.h"

namespace bench::agent {
namespace {

// Sets an environment variable for one test (the fake reads it at nvmlInit_v2).
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    setenv(name, value, 1);
  }
  ~ScopedEnv() { unsetenv(name_); }

 private:
  const char* name_;
};

TEST(NvmlTest, MissingLibraryIsNotFound) {
  auto nvml = Nvml::Open("/nonexistent/libnvidia-ml.so.1");
  ASSERT_FALSE(nvml.ok());
  EXPECT_EQ(nvml.status().code(), absl::StatusCode::kNotFound);
  EXPECT_NE(nvml.status().message().find("cannot load /nonexistent/libnvidia-ml.so.1"),
            absl::string_view::npos)
      << nvml.status();
}

TEST(NvmlTest, FailingInitIsUnavailable) {
  ScopedEnv fail("FAKE_NVML_FAIL_INIT", "1");
  auto nvml = Nvml::Open(FAKE_NVML_LIBRARY);
  ASSERT_FALSE(nvml.ok());
  EXPECT_EQ(nvml.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_NE(nvml.status().message().find("nvmlInit_v2"), absl::string_view::npos);
}

TEST(NvmlTest, ReadsTheScriptedValues) {
  auto nvml = Nvml::Open(FAKE_NVML_LIBRARY);
  ASSERT_TRUE(nvml.ok()) << nvml.status();
  auto gpus = (*nvml)->ListGpus();
  ASSERT_TRUE(gpus.ok()) << gpus.status();
  ASSERT_EQ(gpus->size(), 2u);
  EXPECT_EQ((*gpus)[1].uuid, "GPU-fake-1");

  GpuReading gpu0 = (*nvml)->Read(0);
  EXPECT_EQ(gpu0.power_w, 300.0);
  EXPECT_EQ(gpu0.power_average_w, 300.0);
  EXPECT_EQ(gpu0.sm_clock_mhz, 1980.0);
  EXPECT_EQ(gpu0.memory_clock_mhz, 1593.0);
  EXPECT_EQ(gpu0.temperature_c, 60.0);
  EXPECT_EQ(gpu0.gpu_utilization_pct, 100.0);
  EXPECT_EQ(gpu0.memory_utilization_pct, 40.0);
  EXPECT_EQ(gpu0.memory_used_bytes, 4096LL << 20);
  EXPECT_EQ(gpu0.throttle_reasons, 0u);
  ASSERT_TRUE(gpu0.energy_j.has_value());
  EXPECT_GE(*gpu0.energy_j, 1000.0);  // the fixed offset, 1e6 mJ
  // A healthy link and clocks at their maximum, no errors: the fake's defaults.
  EXPECT_EQ(gpu0.pcie_gen, 4);
  EXPECT_EQ(gpu0.pcie_gen_max, 4);
  EXPECT_EQ(gpu0.pcie_width, 16);
  EXPECT_EQ(gpu0.pcie_width_max, 16);
  EXPECT_EQ(gpu0.max_sm_clock_mhz, 1980.0);
  EXPECT_EQ(gpu0.max_memory_clock_mhz, 1593.0);
  EXPECT_EQ(gpu0.power_limit_w, 400.0);
  EXPECT_EQ(gpu0.ecc_corrected, 0);
  EXPECT_EQ(gpu0.ecc_uncorrected, 0);
  EXPECT_EQ(gpu0.xid_errors, 0);

  GpuReading gpu1 = (*nvml)->Read(1);
  EXPECT_EQ(gpu1.power_w, 250.0);
  EXPECT_EQ(gpu1.sm_clock_mhz, 1755.0);
  EXPECT_EQ(gpu1.max_sm_clock_mhz, 1755.0);
  EXPECT_EQ(gpu1.temperature_c, 70.0);

  GpuReading none = (*nvml)->Read(5);
  EXPECT_FALSE(none.power_w.has_value());
  EXPECT_FALSE(none.energy_j.has_value());
  EXPECT_FALSE(none.sm_clock_mhz.has_value());
  EXPECT_FALSE(none.pcie_gen.has_value());
  EXPECT_FALSE(none.xid_errors.has_value());
}

TEST(NvmlTest, ReadsLinkMaxClocksPowerLimitAndErrorCounts) {
  ScopedEnv gen("FAKE_NVML_PCIE_GEN", "5,3");
  ScopedEnv gen_max("FAKE_NVML_PCIE_GEN_MAX", "5");
  ScopedEnv width("FAKE_NVML_PCIE_WIDTH", "16,8");
  ScopedEnv width_max("FAKE_NVML_PCIE_WIDTH_MAX", "16");
  ScopedEnv max_sm("FAKE_NVML_MAX_SM_CLOCK_MHZ", "1980");
  ScopedEnv max_mem("FAKE_NVML_MAX_MEM_CLOCK_MHZ", "2619");
  ScopedEnv limit("FAKE_NVML_POWER_LIMIT_W", "700,350");
  ScopedEnv corrected("FAKE_NVML_ECC_CORRECTED", "0,12");
  ScopedEnv uncorrected("FAKE_NVML_ECC_UNCORRECTED", "0,2");
  auto nvml = Nvml::Open(FAKE_NVML_LIBRARY);
  ASSERT_TRUE(nvml.ok()) << nvml.status();
  GpuReading gpu0 = (*nvml)->Read(0);
  EXPECT_EQ(gpu0.pcie_gen, 5);
  EXPECT_EQ(gpu0.pcie_width, 16);
  EXPECT_EQ(gpu0.power_limit_w, 700.0);
  EXPECT_EQ(gpu0.ecc_uncorrected, 0);
  GpuReading gpu1 = (*nvml)->Read(1);
  EXPECT_EQ(gpu1.pcie_gen, 3);  // downtrained: below its maximum generation and width
  EXPECT_EQ(gpu1.pcie_gen_max, 5);
  EXPECT_EQ(gpu1.pcie_width, 8);
  EXPECT_EQ(gpu1.pcie_width_max, 16);
  EXPECT_EQ(gpu1.sm_clock_mhz, 1755.0);
  EXPECT_EQ(gpu1.max_sm_clock_mhz, 1980.0);
  EXPECT_EQ(gpu1.max_memory_clock_mhz, 2619.0);
  EXPECT_EQ(gpu1.power_limit_w, 350.0);
  EXPECT_EQ(gpu1.ecc_corrected, 12);
  EXPECT_EQ(gpu1.ecc_uncorrected, 2);
}

TEST(NvmlTest, XidEventsAreCountedOncePerGpuAndSession) {
  ScopedEnv xid("FAKE_NVML_XID_ERRORS", "0,3");
  auto nvml = Nvml::Open(FAKE_NVML_LIBRARY);
  ASSERT_TRUE(nvml.ok()) << nvml.status();
  EXPECT_EQ((*nvml)->Read(0).xid_errors, 0);
  EXPECT_EQ((*nvml)->Read(1).xid_errors, 3);
  // Drained events are not counted again.
  EXPECT_EQ((*nvml)->Read(1).xid_errors, 3);
  EXPECT_EQ((*nvml)->Read(0).xid_errors, 0);
  // Another session has an event set of its own: it counts from its own start.
  auto second = Nvml::Open(FAKE_NVML_LIBRARY);
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_EQ((*second)->Read(1).xid_errors, 3);
  EXPECT_EQ((*nvml)->Read(1).xid_errors, 3);
}

TEST(NvmlTest, ReadingsTheGpuDoesNotSupportStayUnset) {
  ScopedEnv xid("FAKE_NVML_XID_ERRORS", "2");
  ScopedEnv unsupported("FAKE_NVML_UNSUPPORTED",
                        "nvmlDeviceGetTotalEccErrors,nvmlDeviceRegisterEvents,"
                        "nvmlDeviceGetMaxPcieLinkWidth,nvmlDeviceGetEnforcedPowerLimit");
  auto nvml = Nvml::Open(FAKE_NVML_LIBRARY);
  ASSERT_TRUE(nvml.ok()) << nvml.status();
  GpuReading reading = (*nvml)->Read(0);
  EXPECT_FALSE(reading.ecc_corrected.has_value());
  EXPECT_FALSE(reading.ecc_uncorrected.has_value());
  EXPECT_FALSE(reading.xid_errors.has_value()) << "no GPU could be registered for XIDs";
  EXPECT_FALSE(reading.pcie_width_max.has_value());
  EXPECT_FALSE(reading.power_limit_w.has_value());
  EXPECT_EQ(reading.pcie_width, 16);
  EXPECT_EQ(reading.pcie_gen_max, 4);
  EXPECT_EQ(reading.max_sm_clock_mhz, 1980.0);
  EXPECT_EQ(reading.power_w, 300.0);
}

TEST(NvmlTest, EnvironmentScriptsTheFake) {
  ScopedEnv gpus("FAKE_NVML_GPUS", "3");
  ScopedEnv power("FAKE_NVML_POWER_W", "100,200");
  ScopedEnv clock("FAKE_NVML_SM_CLOCK_MHZ", "1410");
  ScopedEnv throttle("FAKE_NVML_THROTTLE", "0x44");
  auto nvml = Nvml::Open(FAKE_NVML_LIBRARY);
  ASSERT_TRUE(nvml.ok()) << nvml.status();
  auto list = (*nvml)->ListGpus();
  ASSERT_TRUE(list.ok());
  EXPECT_EQ(list->size(), 3u);
  EXPECT_EQ((*nvml)->Read(0).power_w, 100.0);
  EXPECT_EQ((*nvml)->Read(2).power_w, 200.0);  // a short list repeats its last value
  EXPECT_EQ((*nvml)->Read(2).sm_clock_mhz, 1410.0);
  EXPECT_EQ((*nvml)->Read(1).throttle_reasons, 0x44u);
}

TEST(NvmlTest, InstantPowerUnsetWhereNotSupported) {
  ScopedEnv no_instant("FAKE_NVML_NO_INSTANT_POWER", "1");
  auto nvml = Nvml::Open(FAKE_NVML_LIBRARY);
  ASSERT_TRUE(nvml.ok()) << nvml.status();
  GpuReading reading = (*nvml)->Read(0);
  EXPECT_FALSE(reading.power_w.has_value());
  EXPECT_EQ(reading.power_average_w, 300.0);
  EXPECT_TRUE(reading.energy_j.has_value());
}

TEST(NvmlTest, EnergyGrowsAtTheScriptedPower) {
  auto nvml = Nvml::Open(FAKE_NVML_LIBRARY);
  ASSERT_TRUE(nvml.ok()) << nvml.status();
  auto start = std::chrono::steady_clock::now();
  std::optional<double> e0 = (*nvml)->Read(1).energy_j;
  absl::SleepFor(absl::Milliseconds(400));
  std::optional<double> e1 = (*nvml)->Read(1).energy_j;
  double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_TRUE(e0.has_value() && e1.has_value());
  double watts = (*e1 - *e0) / seconds;
  EXPECT_NEAR(watts, 250.0, 250.0 * 0.1) << "energy " << *e0 << " -> " << *e1 << " J over "
                                         << seconds << " s";
}

TEST(NvmlTest, EnergyOnlyGrowsAcrossSessions) {
  std::optional<double> before;
  {
    auto nvml = Nvml::Open(FAKE_NVML_LIBRARY);
    ASSERT_TRUE(nvml.ok());
    before = (*nvml)->Read(0).energy_j;
  }
  absl::SleepFor(absl::Milliseconds(20));
  auto nvml = Nvml::Open(FAKE_NVML_LIBRARY);
  ASSERT_TRUE(nvml.ok());
  std::optional<double> after = (*nvml)->Read(0).energy_j;
  ASSERT_TRUE(before.has_value() && after.has_value());
  EXPECT_GT(*after, *before);
}

TEST(NvmlTest, SessionsNestAndShutDown) {
  auto first = Nvml::Open(FAKE_NVML_LIBRARY);
  ASSERT_TRUE(first.ok());
  {
    auto second = Nvml::Open(FAKE_NVML_LIBRARY);
    ASSERT_TRUE(second.ok());
  }
  // NVML is still initialised for the first session.
  EXPECT_EQ((*first)->Read(0).temperature_c, 60.0);
}

}  // namespace
}  // namespace bench::agent
