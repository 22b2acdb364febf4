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
//   FAKE_NVML_MAX_SM_CLOCK_MHZ  maximum SM clock (nvmlDeviceGetMaxClockInfo; default: the
//                               SM clock's values, i.e. each GPU runs at its maximum)
//   FAKE_NVML_MAX_MEM_CLOCK_MHZ maximum memory clock (default: the memory clock's values)
//   FAKE_NVML_POWER_LIMIT_W     enforced power limit in W (default "400")
//   FAKE_NVML_PCIE_GEN          current PCIe link generation (default "4")
//   FAKE_NVML_PCIE_GEN_MAX      maximum PCIe link generation (default "4")
//   FAKE_NVML_PCIE_WIDTH        current PCIe link width in lanes (default "16")
//   FAKE_NVML_PCIE_WIDTH_MAX    maximum PCIe link width in lanes (default "16")
//   FAKE_NVML_ECC_CORRECTED     volatile corrected ECC error count (default "0")
//   FAKE_NVML_ECC_UNCORRECTED   volatile uncorrected ECC error count (default "0")
//   FAKE_NVML_XID_ERRORS        XID errors on each GPU (default "0"): each event set that
//                               registers the GPU for nvmlEventTypeXidCriticalError gets one
//                               event (XID 79) per error not yet delivered to it, one per
//                               nvmlEventSetWait_v2 call (which never blocks: with nothing
//                               pending it answers NVML_ERROR_TIMEOUT at once)
//   FAKE_NVML_UNSUPPORTED       NVML function names, comma-separated, that answer
//                               NVML_ERROR_NOT_SUPPORTED (e.g. "nvmlDeviceGetTotalEccErrors,
//                               nvmlDeviceRegisterEvents": a GPU without ECC or XID events);
//                               honoured by the entry points above and the power, clock,
//                               temperature and throttle ones
//   FAKE_NVML_FAIL_INIT         "1": nvmlInit_v2 fails with NVML_ERROR_DRIVER_NOT_LOADED
//
//   FAKE_NVML_SCENARIO          a scenario file (common/fault_scenario.h; format in
//                               docs/diagnosis.md): its GPU rules for this node override
//                               the values above over time, field by field: sm_clock_mhz,
//                               max_sm_clock_mhz, memory_clock_mhz, max_memory_clock_mhz,
//                               power_w (instantaneous and average), power_limit_w,
//                               temperature_c, throttle, pcie_gen, pcie_gen_max,
//                               pcie_width, pcie_width_max, ecc_corrected, ecc_uncorrected,
//                               xid_errors (XIDs a rule adds arrive as events, as above);
//                               speed and speed_spread are for simulated trainers, not
//                               NVML. Times are seconds since the file's `epoch` line or,
//                               without one, since this process first read the file (its
//                               first nvmlInit_v2 with it). The file is re-read when it
//                               changes (tests rewrite it whole, by rename); a file that
//                               cannot be read or parsed fails nvmlInit_v2 with
//                               NVML_ERROR_UNKNOWN, whose nvmlErrorString is the parser's
//                               error ("FAKE_NVML_SCENARIO: PATH: line N: ...").
//   FAKE_NVML_NODE              this node's name, as the rules' node= selects it (default
//                               "": only node=* rules apply)
//
//   FAKE_NVML_UUID_PREFIX       UUIDs are "<prefix>-<index>" (default "GPU-fake"), so
//                               that several fake nodes can have distinct GPUs
//   FAKE_NVML_NAME              every GPU's name (default "Fake GPU <index>"), so that a
//                               fleet of fake GPUs can be one GPU model
//
// Fixed: GPU i is named "Fake GPU i" (unless FAKE_NVML_NAME), has UUID "GPU-fake-i" and (16 << 30) * (i + 1)
// bytes of memory. The energy counter is consistent with the power: the power shown,
// integrated over time (steady clock) since the library was loaded, piecewise constant
// between two reads of the counter, + FAKE_NVML_ENERGY_OFFSET_MJ; at a constant power
//   energy_mJ = power_W * 1000 * (seconds since the library was loaded; it is linked with
//               -z nodelete, so it stays loaded until the process exits) + offset
// so an energy-per-image computed from it is checkable (about power x window / images).
// Thread-safe.
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <list>
#include <mutex>
#include <string>

#include "tests/fake_nvml/fake_gpu_state.h"

#define FAKE_NVML_EXPORT __attribute__((visibility("default")))

namespace {

constexpr int kSuccess = 0;
constexpr int kErrorUninitialized = 1;
constexpr int kErrorInvalidArgument = 2;
constexpr int kErrorNotSupported = 3;
constexpr int kErrorDriverNotLoaded = 9;
constexpr int kErrorInsufficientSize = 7;
constexpr int kErrorTimeout = 10;
constexpr int kErrorUnknown = 999;

constexpr unsigned long long kEventTypeXidCriticalError = 0x8;
constexpr unsigned long long kFakeXid = 79;  // "GPU has fallen off the bus"
constexpr int kMemoryErrorCorrected = 0, kMemoryErrorUncorrected = 1;
constexpr int kVolatileEcc = 0, kAggregateEcc = 1;

constexpr unsigned kFieldPowerInstant = 186;  // NVML_FI_DEV_POWER_INSTANT (mW)
constexpr int kValueTypeUnsignedInt = 1;      // NVML_VALUE_TYPE_UNSIGNED_INT
constexpr int kClockGraphics = 0, kClockSm = 1, kClockMem = 2, kClockVideo = 3;
constexpr int kTemperatureGpu = 0;
using fake_nvml::GpuValues;
using fake_nvml::kMaxGpus;
using fake_nvml::PerGpu;

const std::chrono::steady_clock::time_point kLoaded = std::chrono::steady_clock::now();

struct Device {
  int index;
};
Device devices[kMaxGpus];

// An nvmlEventSet_t: the GPUs registered for XID events and the XIDs delivered to it.
struct EventSet {
  bool xid[kMaxGpus] = {};
  long long delivered[kMaxGpus] = {};
};

std::mutex mu;
int init_count = 0;  // guarded by mu
fake_nvml::Config config;        // guarded by mu
std::list<EventSet> event_sets;  // guarded by mu
// Why the last nvmlInit_v2 that failed with NVML_ERROR_UNKNOWN did (nvmlErrorString's
// text for that code; it lives until the next such failure).
std::string init_error = "Unknown Error (fake)";  // guarded by mu
// Each GPU's energy counter: the power integrated up to `last` (guarded by mu).
struct EnergyCounter {
  double mj = 0;
  std::chrono::steady_clock::time_point last = kLoaded;
};
EnergyCounter energy[kMaxGpus];

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

unsigned Round(double value) { return value > 0 ? static_cast<unsigned>(value + 0.5) : 0; }

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
  fake_nvml::Config c = fake_nvml::ReadConfig();
  if (c.fail_init) return kErrorDriverNotLoaded;
  if (!c.error.empty()) {
    init_error = c.error;
    return kErrorUnknown;
  }
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
    case kErrorTimeout: return "Timeout";
    case kErrorUnknown: {
      std::lock_guard<std::mutex> lock(mu);
      return init_error.c_str();
    }
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
  const char* fixed_name = std::getenv("FAKE_NVML_NAME");
  if (fixed_name != nullptr && *fixed_name != '\0') {
    std::snprintf(name, length, "%s", fixed_name);
  } else {
    std::snprintf(name, length, "Fake GPU %d", device->index);
  }
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
  if (config.Unsupported(__func__)) return kErrorNotSupported;
  *milliwatts = Round(fake_nvml::Values(config, device->index).power_w * 1000);
  return kSuccess;
}

FAKE_NVML_EXPORT int nvmlDeviceGetTotalEnergyConsumption(void* handle,
                                                         unsigned long long* millijoules) {
  std::lock_guard<std::mutex> lock(mu);
  int rc;
  const Device* device = Check(handle, &rc);
  if (device == nullptr) return rc;
  if (config.Unsupported(__func__)) return kErrorNotSupported;
  // The integral of the power shown, piecewise constant between calls.
  EnergyCounter& counter = energy[device->index];
  auto now = std::chrono::steady_clock::now();
  counter.mj += fake_nvml::Values(config, device->index).power_w * 1000 *
                std::chrono::duration<double>(now - counter.last).count();
  counter.last = now;
  *millijoules = static_cast<unsigned long long>(counter.mj + config.energy_offset_mj);
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
      field.value.uiVal = Round(fake_nvml::Values(config, device->index).power_w * 1000);
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
  if (config.Unsupported(__func__)) return kErrorNotSupported;
  GpuValues v = fake_nvml::Values(config, device->index);
  switch (type) {
    case kClockGraphics:
    case kClockSm: *mhz = Round(v.sm_clock_mhz); return kSuccess;
    case kClockMem: *mhz = Round(v.mem_clock_mhz); return kSuccess;
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
  if (config.Unsupported(__func__)) return kErrorNotSupported;
  *celsius = Round(fake_nvml::Values(config, device->index).temp_c);
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
  if (config.Unsupported(__func__)) return kErrorNotSupported;
  *reasons = fake_nvml::Values(config, device->index).throttle;
  return kSuccess;
}

FAKE_NVML_EXPORT int nvmlDeviceGetCurrentClocksEventReasons(void* handle,
                                                            unsigned long long* reasons) {
  return nvmlDeviceGetCurrentClocksThrottleReasons(handle, reasons);
}

FAKE_NVML_EXPORT int nvmlDeviceGetMaxClockInfo(void* handle, int type, unsigned* mhz) {
  std::lock_guard<std::mutex> lock(mu);
  int rc;
  const Device* device = Check(handle, &rc);
  if (device == nullptr) return rc;
  if (mhz == nullptr) return kErrorInvalidArgument;
  if (config.Unsupported(__func__)) return kErrorNotSupported;
  GpuValues v = fake_nvml::Values(config, device->index);
  switch (type) {
    case kClockGraphics:
    case kClockSm: *mhz = Round(v.max_sm_clock_mhz); return kSuccess;
    case kClockMem: *mhz = Round(v.max_mem_clock_mhz); return kSuccess;
    case kClockVideo: return kErrorNotSupported;
    default: return kErrorInvalidArgument;
  }
}

FAKE_NVML_EXPORT int nvmlDeviceGetEnforcedPowerLimit(void* handle, unsigned* milliwatts) {
  std::lock_guard<std::mutex> lock(mu);
  int rc;
  const Device* device = Check(handle, &rc);
  if (device == nullptr) return rc;
  if (milliwatts == nullptr) return kErrorInvalidArgument;
  if (config.Unsupported(__func__)) return kErrorNotSupported;
  *milliwatts = Round(fake_nvml::Values(config, device->index).power_limit_w * 1000);
  return kSuccess;
}

namespace {
// One unsigned figure of a GPU, for the PCIe entry points.
int PcieValue(const char* function, void* handle, unsigned* out, double GpuValues::*field) {
  std::lock_guard<std::mutex> lock(mu);
  int rc;
  const Device* device = Check(handle, &rc);
  if (device == nullptr) return rc;
  if (out == nullptr) return kErrorInvalidArgument;
  if (config.Unsupported(function)) return kErrorNotSupported;
  *out = Round(fake_nvml::Values(config, device->index).*field);
  return kSuccess;
}
}  // namespace

FAKE_NVML_EXPORT int nvmlDeviceGetCurrPcieLinkGeneration(void* handle, unsigned* generation) {
  return PcieValue(__func__, handle, generation, &GpuValues::pcie_gen);
}

FAKE_NVML_EXPORT int nvmlDeviceGetMaxPcieLinkGeneration(void* handle, unsigned* generation) {
  return PcieValue(__func__, handle, generation, &GpuValues::pcie_gen_max);
}

FAKE_NVML_EXPORT int nvmlDeviceGetCurrPcieLinkWidth(void* handle, unsigned* width) {
  return PcieValue(__func__, handle, width, &GpuValues::pcie_width);
}

FAKE_NVML_EXPORT int nvmlDeviceGetMaxPcieLinkWidth(void* handle, unsigned* width) {
  return PcieValue(__func__, handle, width, &GpuValues::pcie_width_max);
}

// Volatile and aggregate counts are the same here (the fake driver never reloads).
FAKE_NVML_EXPORT int nvmlDeviceGetTotalEccErrors(void* handle, int error_type, int counter_type,
                                                 unsigned long long* count) {
  std::lock_guard<std::mutex> lock(mu);
  int rc;
  const Device* device = Check(handle, &rc);
  if (device == nullptr) return rc;
  if (count == nullptr || (counter_type != kVolatileEcc && counter_type != kAggregateEcc)) {
    return kErrorInvalidArgument;
  }
  if (config.Unsupported(__func__)) return kErrorNotSupported;
  GpuValues v = fake_nvml::Values(config, device->index);
  switch (error_type) {
    case kMemoryErrorCorrected:
      *count = static_cast<unsigned long long>(Round(v.ecc_corrected));
      return kSuccess;
    case kMemoryErrorUncorrected:
      *count = static_cast<unsigned long long>(Round(v.ecc_uncorrected));
      return kSuccess;
    default: return kErrorInvalidArgument;
  }
}

FAKE_NVML_EXPORT int nvmlEventSetCreate(void** set) {
  std::lock_guard<std::mutex> lock(mu);
  if (init_count <= 0) return kErrorUninitialized;
  if (set == nullptr) return kErrorInvalidArgument;
  if (config.Unsupported(__func__)) return kErrorNotSupported;
  event_sets.emplace_back();
  *set = &event_sets.back();
  return kSuccess;
}

namespace {
// The set behind `handle` (under `mu`), or nullptr if it is not a live one of ours.
EventSet* FindSet(void* handle) {
  for (EventSet& set : event_sets) {
    if (&set == handle) return &set;
  }
  return nullptr;
}
}  // namespace

FAKE_NVML_EXPORT int nvmlDeviceRegisterEvents(void* handle, unsigned long long types,
                                              void* set_handle) {
  std::lock_guard<std::mutex> lock(mu);
  int rc;
  const Device* device = Check(handle, &rc);
  if (device == nullptr) return rc;
  EventSet* set = FindSet(set_handle);
  if (set == nullptr) return kErrorInvalidArgument;
  // Only XID events are offered; asking for any other type is NOT_SUPPORTED, as NVML
  // answers for a type the device lacks.
  if (config.Unsupported(__func__) || types != kEventTypeXidCriticalError)
    return kErrorNotSupported;
  set->xid[device->index] = true;
  return kSuccess;
}

// nvmlEventData_t, as laid out in nvml.h.
struct nvmlEventData_t {
  void* device;
  unsigned long long eventType;
  unsigned long long eventData;
  unsigned int gpuInstanceId;
  unsigned int computeInstanceId;
};

// Never blocks, whatever the timeout: one pending XID, or NVML_ERROR_TIMEOUT.
FAKE_NVML_EXPORT int nvmlEventSetWait_v2(void* set_handle, nvmlEventData_t* data,
                                         unsigned /*timeout_ms*/) {
  std::lock_guard<std::mutex> lock(mu);
  if (init_count <= 0) return kErrorUninitialized;
  EventSet* set = FindSet(set_handle);
  if (set == nullptr || data == nullptr) return kErrorInvalidArgument;
  for (int i = 0; i < config.gpus; ++i) {
    if (!set->xid[i]) continue;
    long long total = static_cast<long long>(Round(fake_nvml::Values(config, i).xid_errors));
    if (set->delivered[i] >= total) continue;
    ++set->delivered[i];
    data->device = &devices[i];
    data->eventType = kEventTypeXidCriticalError;
    data->eventData = kFakeXid;
    data->gpuInstanceId = 0xFFFFFFFFu;
    data->computeInstanceId = 0xFFFFFFFFu;
    return kSuccess;
  }
  return kErrorTimeout;
}

FAKE_NVML_EXPORT int nvmlEventSetWait(void* set, nvmlEventData_t* data, unsigned timeout_ms) {
  return nvmlEventSetWait_v2(set, data, timeout_ms);
}

FAKE_NVML_EXPORT int nvmlEventSetFree(void* set_handle) {
  std::lock_guard<std::mutex> lock(mu);
  for (auto it = event_sets.begin(); it != event_sets.end(); ++it) {
    if (&*it == set_handle) {
      event_sets.erase(it);
      return kSuccess;
    }
  }
  return kErrorInvalidArgument;
}

}  // extern "C"
