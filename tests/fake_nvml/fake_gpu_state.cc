#include "tests/fake_nvml/fake_gpu_state.h"

#include <cstdlib>
#include <cstring>

namespace fake_nvml {
namespace {

const char* Env(const char* name) {
  const char* value = std::getenv(name);
  return value != nullptr && *value != '\0' ? value : nullptr;
}

void ListFromEnv(const char* name, std::vector<double>* out) {
  const char* value = Env(name);
  if (value == nullptr) return;
  std::vector<double> parsed;
  std::string text = value;
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = text.find(',', start);
    if (comma == std::string::npos) comma = text.size();
    std::string item = text.substr(start, comma - start);
    if (!item.empty()) parsed.push_back(std::strtod(item.c_str(), nullptr));
    start = comma + 1;
  }
  if (!parsed.empty()) *out = parsed;
}

}  // namespace

Config ReadConfig() {
  Config c;
  if (const char* gpus = Env("FAKE_NVML_GPUS")) {
    c.gpus = std::atoi(gpus);
    if (c.gpus < 0) c.gpus = 0;
    if (c.gpus > kMaxGpus) c.gpus = kMaxGpus;
  }
  ListFromEnv("FAKE_NVML_POWER_W", &c.power_w);
  c.no_instant_power = Env("FAKE_NVML_NO_INSTANT_POWER") != nullptr &&
                       std::strcmp(Env("FAKE_NVML_NO_INSTANT_POWER"), "0") != 0;
  if (const char* offset = Env("FAKE_NVML_ENERGY_OFFSET_MJ")) {
    c.energy_offset_mj = std::strtod(offset, nullptr);
  }
  ListFromEnv("FAKE_NVML_SM_CLOCK_MHZ", &c.sm_clock_mhz);
  ListFromEnv("FAKE_NVML_MEM_CLOCK_MHZ", &c.mem_clock_mhz);
  ListFromEnv("FAKE_NVML_TEMP_C", &c.temp_c);
  ListFromEnv("FAKE_NVML_UTIL_PCT", &c.util_pct);
  ListFromEnv("FAKE_NVML_MEM_UTIL_PCT", &c.mem_util_pct);
  ListFromEnv("FAKE_NVML_MEM_USED_MIB", &c.mem_used_mib);
  if (const char* throttle = Env("FAKE_NVML_THROTTLE")) {
    c.throttle = std::strtoull(throttle, nullptr, 0);
  }
  ListFromEnv("FAKE_NVML_MAX_SM_CLOCK_MHZ", &c.max_sm_clock_mhz);
  ListFromEnv("FAKE_NVML_MAX_MEM_CLOCK_MHZ", &c.max_mem_clock_mhz);
  if (c.max_sm_clock_mhz.empty()) c.max_sm_clock_mhz = c.sm_clock_mhz;
  if (c.max_mem_clock_mhz.empty()) c.max_mem_clock_mhz = c.mem_clock_mhz;
  ListFromEnv("FAKE_NVML_POWER_LIMIT_W", &c.power_limit_w);
  ListFromEnv("FAKE_NVML_PCIE_GEN", &c.pcie_gen);
  ListFromEnv("FAKE_NVML_PCIE_GEN_MAX", &c.pcie_gen_max);
  ListFromEnv("FAKE_NVML_PCIE_WIDTH", &c.pcie_width);
  ListFromEnv("FAKE_NVML_PCIE_WIDTH_MAX", &c.pcie_width_max);
  ListFromEnv("FAKE_NVML_ECC_CORRECTED", &c.ecc_corrected);
  ListFromEnv("FAKE_NVML_ECC_UNCORRECTED", &c.ecc_uncorrected);
  ListFromEnv("FAKE_NVML_XID_ERRORS", &c.xid_errors);
  if (const char* names = Env("FAKE_NVML_UNSUPPORTED")) {
    std::string text = names;
    size_t start = 0;
    while (start <= text.size()) {
      size_t comma = text.find(',', start);
      if (comma == std::string::npos) comma = text.size();
      std::string name = text.substr(start, comma - start);
      if (!name.empty()) c.unsupported.insert(name);
      start = comma + 1;
    }
  }
  if (const char* prefix = Env("FAKE_NVML_UUID_PREFIX")) c.uuid_prefix = prefix;
  if (const char* path = Env("FAKE_NVML_SCENARIO")) {
    const char* node = Env("FAKE_NVML_NODE");
    c.scenario = ScenarioFile::Open(path, node != nullptr ? node : "", &c.error);
  }
  c.fail_init =
      Env("FAKE_NVML_FAIL_INIT") != nullptr && std::strcmp(Env("FAKE_NVML_FAIL_INIT"), "0") != 0;
  return c;
}

double PerGpu(const std::vector<double>& values, int index) {
  if (values.empty()) return 0;
  return values[static_cast<size_t>(index) < values.size() ? index : values.size() - 1];
}

GpuValues Values(const Config& config, int index) {
  GpuValues v;
  v.power_w = PerGpu(config.power_w, index);
  v.sm_clock_mhz = PerGpu(config.sm_clock_mhz, index);
  v.max_sm_clock_mhz = PerGpu(config.max_sm_clock_mhz, index);
  v.mem_clock_mhz = PerGpu(config.mem_clock_mhz, index);
  v.max_mem_clock_mhz = PerGpu(config.max_mem_clock_mhz, index);
  v.temp_c = PerGpu(config.temp_c, index);
  v.power_limit_w = PerGpu(config.power_limit_w, index);
  v.throttle = config.throttle;
  v.pcie_gen = PerGpu(config.pcie_gen, index);
  v.pcie_gen_max = PerGpu(config.pcie_gen_max, index);
  v.pcie_width = PerGpu(config.pcie_width, index);
  v.pcie_width_max = PerGpu(config.pcie_width_max, index);
  v.ecc_corrected = PerGpu(config.ecc_corrected, index);
  v.ecc_uncorrected = PerGpu(config.ecc_uncorrected, index);
  v.xid_errors = PerGpu(config.xid_errors, index);
  if (config.scenario == nullptr) return v;
  const bench::GpuState s = config.scenario->Now(index);
  auto set = [](double* out, const auto& value) {
    if (value) *out = static_cast<double>(*value);
  };
  set(&v.power_w, s.power_w);
  set(&v.sm_clock_mhz, s.sm_clock_mhz);
  set(&v.max_sm_clock_mhz, s.max_sm_clock_mhz);
  set(&v.mem_clock_mhz, s.memory_clock_mhz);
  set(&v.max_mem_clock_mhz, s.max_memory_clock_mhz);
  set(&v.temp_c, s.temperature_c);
  set(&v.power_limit_w, s.power_limit_w);
  if (s.throttle_reasons) v.throttle = *s.throttle_reasons;
  set(&v.pcie_gen, s.pcie_gen);
  set(&v.pcie_gen_max, s.pcie_gen_max);
  set(&v.pcie_width, s.pcie_width);
  set(&v.pcie_width_max, s.pcie_width_max);
  set(&v.ecc_corrected, s.ecc_corrected);
  set(&v.ecc_uncorrected, s.ecc_uncorrected);
  set(&v.xid_errors, s.xid_errors);
  return v;
}

}  // namespace fake_nvml
