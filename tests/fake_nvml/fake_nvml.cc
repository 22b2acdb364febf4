// A stand-in libnvidia-ml.so.1 for tests: the NVML entry points bench-agent uses, with
// NVML's C ABI, and values scripted from the environment so that CI can run the whole
// telemetry path (agent -> controller -> SQLite, benchctl, /metrics) without a GPU.
//
// The environment is read at every nvmlInit_v2 (so a test can change it between
// sessions). Per-GPU lists are comma-separated; a list shorter than the GPU count
// repeats its last value.
//
//   FAKE_NVML_GPUS              number of GPUs (default 2, at most 64)
//   FAKE_NVML_POWER_W           power draw in W (default "300,250"); both the
//                               instantaneous field (NVML_FI_DEV_POWER_INSTANT) and
//                               nvmlDeviceGetPowerUsage report it
//   FAKE_NVML_NO_INSTANT_POWER  "1": the instantaneous power field answers
//                               NVML_ERROR_NOT_SUPPORTED (as on pre-Ampere GPUs)
//   FAKE_NVML_ENERGY_OFFSET_MJ  energy counter at load time in mJ (default 1000000)
//   FAKE_NVML_SM_CLOCK_MHZ      SM clock (default "1980,1755")
//   FAKE_NVML_MEM_CLOCK_MHZ     memory clock (default "1593")
//   FAKE_NVML_TEMP_C            GPU temperature (default "60,70")
//   FAKE_NVML_UTIL_PCT          GPU utilisation (default "100,90")
//   FAKE_NVML_MEM_UTIL_PCT      memory (bandwidth) utilisation (default "40,35")
//   FAKE_NVML_MEM_USED_MIB      memory used in MiB (default "4096")
//   FAKE_NVML_THROTTLE          clock throttle reason mask, decimal or 0x hex (default 0)
//   FAKE_NVML_FAIL_INIT         "1": nvmlInit_v2 fails with NVML_ERROR_DRIVER_NOT_LOADED
//
//   FAKE_NVML_UUID_PREFIX       UUIDs are "<prefix>-<index>" (default "GPU-fake"), so
//                               that several fake nodes can have distinct GPUs
//
// Fixed: GPU i is named "Fake GPU i", has UUID "GPU-fake-i" and (16 << 30) * (i + 1)
// bytes of memory. The energy counter is consistent with the power:
//   energy_mJ = power_W * 1000 * (seconds since the library was loaded, steady clock;
//               it is linked with -z nodelete, so it stays loaded until the process exits)
//               + FAKE_NVML_ENERGY_OFFSET_MJ
// so an energy-per-image computed from it is checkable (about power x window / images).
// Thread-safe.
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#define FAKE_NVML_EXPORT __attribute__((visibility("default")))

namespace {

constexpr int kSuccess = 0;
constexpr int kErrorUninitialized = 1;
constexpr int kErrorInvalidArgument = 2;
constexpr int kErrorNotSupported = 3;
constexpr int kErrorDriverNotLoaded = 9;
constexpr int kErrorInsufficientSize = 7;

constexpr unsigned kFieldPowerInstant = 186;  // NVML_FI_DEV_POWER_INSTANT (mW)
constexpr int kValueTypeUnsignedInt = 1;      // NVML_VALUE_TYPE_UNSIGNED_INT
constexpr int kClockGraphics = 0, kClockSm = 1, kClockMem = 2, kClockVideo = 3;
constexpr int kTemperatureGpu = 0;
constexpr int kMaxGpus = 64;

const std::chrono::steady_clock::time_point kLoaded = std::chrono::steady_clock::now();

struct Device {
  int index;
};
Device devices[kMaxGpus];

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
  bool fail_init = false;
  std::string uuid_prefix = "GPU-fake";
};

std::mutex mu;
int init_count = 0;  // guarded by mu
Config config;       // guarded by mu

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
  if (const char* prefix = Env("FAKE_NVML_UUID_PREFIX")) c.uuid_prefix = prefix;
  c.fail_init = Env("FAKE_NVML_FAIL_INIT") != nullptr &&
                std::strcmp(Env("FAKE_NVML_FAIL_INIT"), "0") != 0;
  return c;
}

double PerGpu(const std::vector<double>& values, int index) {
  if (values.empty()) return 0;
  return values[static_cast<size_t>(index) < values.size() ? index : values.size() - 1];
}

// The device behind `handle` under `mu`, or nullptr (with *rc set) if NVML is not
// initialised or the handle is not one of ours.
const Device* Check(void* handle, int* rc) {
  if (init_count <= 0) {
    *rc = kErrorUninitialized;
    return nullptr;
  }
  auto* device = static_cast<const Device*>(handle);
  if (device < devices || device >= devices + config.gpus) {
    *rc = kErrorInvalidArgument;
    return nullptr;
  }
  *rc = kSuccess;
  return device;
}

unsigned Round(double value) { return static_cast<unsigned>(value + 0.5); }

}  // namespace

extern "C" {

// NVML's public structs, as laid out in nvml.h.
struct nvmlMemory_t {
  unsigned long long total;
  unsigned long long free;
  unsigned long long used;
};
struct nvmlUtilization_t {
  unsigned int gpu;
  unsigned int memory;
};
union nvmlValue_t {
  double dVal;
  unsigned int uiVal;
  unsigned long ulVal;
  unsigned long long ullVal;
  long long sllVal;
  int siVal;
  unsigned short usVal;
};
struct nvmlFieldValue_t {
  unsigned int fieldId;
  unsigned int scopeId;
  long long timestamp;
  long long latencyUsec;
  int valueType;
  int nvmlReturn;
  nvmlValue_t value;
};

FAKE_NVML_EXPORT int nvmlInit_v2() {
  std::lock_guard<std::mutex> lock(mu);
  Config c = ReadConfig();
  if (c.fail_init) return kErrorDriverNotLoaded;
  config = c;
  for (int i = 0; i < kMaxGpus; ++i) devices[i].index = i;
  ++init_count;
  return kSuccess;
}

FAKE_NVML_EXPORT int nvmlInit() { return nvmlInit_v2(); }

FAKE_NVML_EXPORT int nvmlShutdown() {
  std::lock_guard<std::mutex> lock(mu);
  if (init_count <= 0) return kErrorUninitialized;
  --init_count;
  return kSuccess;
}

FAKE_NVML_EXPORT const char* nvmlErrorString(int code) {
  switch (code) {
    case kSuccess: return "Success";
    case kErrorUninitialized: return "Uninitialized";
    case kErrorInvalidArgument: return "Invalid Argument";
    case kErrorNotSupported: return "Not Supported";
    case kErrorInsufficientSize: return "Insufficient Size";
    case kErrorDriverNotLoaded: return "Driver Not Loaded (fake)";
    default: return "Unknown Error (fake)";
  }
}

FAKE_NVML_EXPORT int nvmlSystemGetDriverVersion(char* version, unsigned length) {
  if (version == nullptr) return kErrorInvalidArgument;
  std::snprintf(version, length, "fake");
  return kSuccess;
}

FAKE_NVML_EXPORT int nvmlSystemGetNVMLVersion(char* version, unsigned length) {
  if (version == nullptr) return kErrorInvalidArgument;
  std::snprintf(version, length, "12.550.fake");
  return kSuccess;
}

FAKE_NVML_EXPORT int nvmlSystemGetCudaDriverVersion_v2(int* version) {
  if (version == nullptr) return kErrorInvalidArgument;
  *version = 12040;  // CUDA 12.4
  return kSuccess;
}

FAKE_NVML_EXPORT int nvmlDeviceGetCount_v2(unsigned* count) {
  std::lock_guard<std::mutex> lock(mu);
  if (init_count <= 0) return kErrorUninitialized;
  if (count == nullptr) return kErrorInvalidArgument;
  *count = static_cast<unsigned>(config.gpus);
  return kSuccess;
}

FAKE_NVML_EXPORT int nvmlDeviceGetHandleByIndex_v2(unsigned index, void** device) {
  std::lock_guard<std::mutex> lock(mu);
  if (init_count <= 0) return kErrorUninitialized;
  if (device == nullptr || index >= static_cast<unsigned>(config.gpus)) {
    return kErrorInvalidArgument;
  }
  *device = &devices[index];
  return kSuccess;
}

FAKE_NVML_EXPORT int nvmlDeviceGetIndex(void* handle, unsigned* index) {
  std::lock_guard<std::mutex> lock(mu);
  int rc;
  const Device* device = Check(handle, &rc);
  if (device == nullptr) return rc;
  *index = static_cast<unsigned>(device->index);
  return kSuccess;
}

FAKE_NVML_EXPORT int nvmlDeviceGetName(void* handle, char* name, unsigned length) {
  std::lock_guard<std::mutex> lock(mu);
  int rc;
  const Device* device = Check(handle, &rc);
  if (device == nullptr) return rc;
  std::snprintf(name, length, "Fake GPU %d", device->index);
  return kSuccess;
}

FAKE_NVML_EXPORT int nvmlDeviceGetUUID(void* handle, char* uuid, unsigned length) {
  std::lock_guard<std::mutex> lock(mu);
  int rc;
  const Device* device = Check(handle, &rc);
  if (device == nullptr) return rc;
  std::snprintf(uuid, length, "%s-%d", config.uuid_prefix.c_str(), device->index);
  return kSuccess;
}

FAKE_NVML_EXPORT int nvmlDeviceGetMemoryInfo(void* handle, nvmlMemory_t* memory) {
  std::lock_guard<std::mutex> lock(mu);
  int rc;
  const Device* device = Check(handle, &rc);
  if (device == nullptr) return rc;
  memory->total = (16ULL << 30) * static_cast<unsigned long long>(device->index + 1);
  unsigned long long used =
      static_cast<unsigned long long>(PerGpu(config.mem_used_mib, device->index)) << 20;
  memory->used = used < memory->total ? used : memory->total;
  memory->free = memory->total - memory->used;
  return kSuccess;
}

FAKE_NVML_EXPORT int nvmlDeviceGetPowerUsage(void* handle, unsigned* milliwatts) {
  std::lock_guard<std::mutex> lock(mu);
  int rc;
  const Device* device = Check(handle, &rc);
  if (device == nullptr) return rc;
  *milliwatts = Round(PerGpu(config.power_w, device->index) * 1000);
  return kSuccess;
}

FAKE_NVML_EXPORT int nvmlDeviceGetTotalEnergyConsumption(void* handle,
                                                         unsigned long long* millijoules) {
  std::lock_guard<std::mutex> lock(mu);
  int rc;
  const Device* device = Check(handle, &rc);
  if (device == nullptr) return rc;
  double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - kLoaded).count();
  double energy = PerGpu(config.power_w, device->index) * 1000 * seconds + config.energy_offset_mj;
  *millijoules = static_cast<unsigned long long>(energy);
  return kSuccess;
}

FAKE_NVML_EXPORT int nvmlDeviceGetFieldValues(void* handle, int count,
                                              nvmlFieldValue_t* values) {
  std::lock_guard<std::mutex> lock(mu);
  int rc;
  const Device* device = Check(handle, &rc);
  if (device == nullptr) return rc;
  if (count < 0 || (count > 0 && values == nullptr)) return kErrorInvalidArgument;
  long long now_us = std::chrono::duration_cast<std::chrono::microseconds>(
                         std::chrono::system_clock::now().time_since_epoch())
                         .count();
  for (int i = 0; i < count; ++i) {
    nvmlFieldValue_t& field = values[i];
    field.timestamp = now_us;
    field.latencyUsec = 0;
    if (field.fieldId == kFieldPowerInstant && !config.no_instant_power) {
      field.valueType = kValueTypeUnsignedInt;
      field.value.uiVal = Round(PerGpu(config.power_w, device->index) * 1000);
      field.nvmlReturn = kSuccess;
    } else {
      field.nvmlReturn = kErrorNotSupported;
    }
  }
  return kSuccess;
}

FAKE_NVML_EXPORT int nvmlDeviceGetClockInfo(void* handle, int type, unsigned* mhz) {
  std::lock_guard<std::mutex> lock(mu);
  int rc;
  const Device* device = Check(handle, &rc);
  if (device == nullptr) return rc;
  switch (type) {
    case kClockGraphics:
    case kClockSm:
      *mhz = Round(PerGpu(config.sm_clock_mhz, device->index));
      return kSuccess;
    case kClockMem:
      *mhz = Round(PerGpu(config.mem_clock_mhz, device->index));
      return kSuccess;
    case kClockVideo:
      return kErrorNotSupported;
    default:
      return kErrorInvalidArgument;
  }
}

FAKE_NVML_EXPORT int nvmlDeviceGetTemperature(void* handle, int sensor, unsigned* celsius) {
  std::lock_guard<std::mutex> lock(mu);
  int rc;
  const Device* device = Check(handle, &rc);
  if (device == nullptr) return rc;
  if (sensor != kTemperatureGpu) return kErrorInvalidArgument;
  *celsius = Round(PerGpu(config.temp_c, device->index));
  return kSuccess;
}

FAKE_NVML_EXPORT int nvmlDeviceGetUtilizationRates(void* handle,
                                                   nvmlUtilization_t* utilization) {
  std::lock_guard<std::mutex> lock(mu);
  int rc;
  const Device* device = Check(handle, &rc);
  if (device == nullptr) return rc;
  utilization->gpu = Round(PerGpu(config.util_pct, device->index));
  utilization->memory = Round(PerGpu(config.mem_util_pct, device->index));
  return kSuccess;
}

FAKE_NVML_EXPORT int nvmlDeviceGetCurrentClocksThrottleReasons(void* handle,
                                                               unsigned long long* reasons) {
  std::lock_guard<std::mutex> lock(mu);
  int rc;
  const Device* device = Check(handle, &rc);
  if (device == nullptr) return rc;
  *reasons = config.throttle;
  return kSuccess;
}

FAKE_NVML_EXPORT int nvmlDeviceGetCurrentClocksEventReasons(void* handle,
                                                            unsigned long long* reasons) {
  return nvmlDeviceGetCurrentClocksThrottleReasons(handle, reasons);
}

}  // extern "C"
