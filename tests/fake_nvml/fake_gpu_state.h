// What the fake NVML's GPUs show (tests/fake_nvml/fake_nvml.cc's header comment lists the
// variables): the environment's values, read at each nvmlInit_v2, and over them the GPU
// rules of a scenario file for this node over time (fake_scenario.h). Not thread-safe: the
// caller (fake_nvml.cc) holds its lock.
#pragma once

#include <memory>
#include <set>
#include <string>
#include <vector>

#include "tests/fake_nvml/fake_scenario.h"

namespace fake_nvml {

inline constexpr int kMaxGpus = 64;

// The environment's values. Per-GPU lists: a list shorter than the GPU count repeats its
// last value.
struct Config {
  int gpus = 2;
  std::vector<double> power_w{300, 250};
  bool no_instant_power = false;
  double energy_offset_mj = 1e6;
  std::vector<double> sm_clock_mhz{1980, 1755};
  std::vector<double> mem_clock_mhz{1593};
  std::vector<double> temp_c{60, 70};
  std::vector<double> util_pct{100, 90};
  std::vector<double> mem_util_pct{40, 35};
  std::vector<double> mem_used_mib{4096};
  unsigned long long throttle = 0;
  std::vector<double> max_sm_clock_mhz;   // unset in the environment: sm_clock_mhz
  std::vector<double> max_mem_clock_mhz;  // unset in the environment: mem_clock_mhz
  std::vector<double> power_limit_w{400};
  std::vector<double> pcie_gen{4};
  std::vector<double> pcie_gen_max{4};
  std::vector<double> pcie_width{16};
  std::vector<double> pcie_width_max{16};
  std::vector<double> ecc_corrected{0};
  std::vector<double> ecc_uncorrected{0};
  std::vector<double> xid_errors{0};
  std::set<std::string> unsupported;  // NVML function names answering NOT_SUPPORTED
  bool fail_init = false;
  std::string uuid_prefix = "GPU-fake";
  // FAKE_NVML_SCENARIO's rules for FAKE_NVML_NODE; null without a scenario.
  std::shared_ptr<ScenarioFile> scenario;
  std::string error;  // why the environment cannot be used (nvmlInit_v2 fails); "" if it can

  bool Unsupported(const char* function) const { return unsupported.count(function) > 0; }
};

// The FAKE_NVML_* variables.
Config ReadConfig();

// values[index], or the list's last value past its end; 0 for an empty list.
double PerGpu(const std::vector<double>& values, int index);

// What one GPU shows at one moment.
struct GpuValues {
  double power_w = 0, sm_clock_mhz = 0, max_sm_clock_mhz = 0, mem_clock_mhz = 0,
         max_mem_clock_mhz = 0, temp_c = 0, power_limit_w = 0;
  unsigned long long throttle = 0;
  double pcie_gen = 0, pcie_gen_max = 0, pcie_width = 0, pcie_width_max = 0;
  double ecc_corrected = 0, ecc_uncorrected = 0, xid_errors = 0;
};

// GPU `index` now: the environment's values, where the scenario's active rules set a
// field, theirs.
GpuValues Values(const Config& config, int index);

}  // namespace fake_nvml
