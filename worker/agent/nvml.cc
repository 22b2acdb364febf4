#include "worker/agent/nvml.h"

#include <dlfcn.h>

#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace bench::agent {
namespace {

// The NVML declarations we use, with the ABI of nvml.h.
using nvmlReturn_t = int;
constexpr nvmlReturn_t kNvmlSuccess = 0;
struct nvmlDevice_st;
using nvmlDevice_t = nvmlDevice_st*;
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
  int valueType;  // nvmlValueType_t
  nvmlReturn_t nvmlReturn;
  nvmlValue_t value;
};
static_assert(sizeof(nvmlFieldValue_t) == 40, "nvmlFieldValue_t layout");

constexpr unsigned kFieldPowerInstant = 186;  // NVML_FI_DEV_POWER_INSTANT, mW
enum ValueType {
  kDouble = 0,
  kUnsignedInt = 1,
  kUnsignedLong = 2,
  kUnsignedLongLong = 3,
  kSignedLongLong = 4,
  kSignedInt = 5,
  kUnsignedShort = 6,
};
// nvmlEventData_t, as laid out in nvml.h.
struct nvmlEventData_t {
  nvmlDevice_t device;
  unsigned long long eventType;
  unsigned long long eventData;  // the XID
  unsigned int gpuInstanceId;
  unsigned int computeInstanceId;
};
struct nvmlEventSet_st;
using nvmlEventSet_t = nvmlEventSet_st*;
constexpr unsigned long long kEventTypeXidCriticalError = 0x8;  // nvmlEventTypeXidCriticalError
constexpr int kMemoryErrorCorrected = 0;                        // NVML_MEMORY_ERROR_TYPE_CORRECTED
constexpr int kMemoryErrorUncorrected = 1;  // NVML_MEMORY_ERROR_TYPE_UNCORRECTED
constexpr int kVolatileEcc = 0;             // NVML_VOLATILE_ECC: since the driver loaded
constexpr int kClockSm = 1;          // NVML_CLOCK_SM
constexpr int kClockMem = 2;         // NVML_CLOCK_MEM
constexpr int kTemperatureGpu = 0;   // NVML_TEMPERATURE_GPU
constexpr unsigned kNvmlStringBuffer = 256;  // >= NVML's *_V2_BUFFER_SIZE (96)

template <typename Fn>
bool Resolve(void* handle, const char* symbol, Fn* out) {
  void* address = dlsym(handle, symbol);
  *out = reinterpret_cast<Fn>(address);
  return address != nullptr;
}

std::optional<double> FieldAsDouble(const nvmlFieldValue_t& field) {
  switch (field.valueType) {
    case kDouble: return field.value.dVal;
    case kUnsignedInt: return static_cast<double>(field.value.uiVal);
    case kUnsignedLong: return static_cast<double>(field.value.ulVal);
    case kUnsignedLongLong: return static_cast<double>(field.value.ullVal);
    case kSignedLongLong: return static_cast<double>(field.value.sllVal);
    case kSignedInt: return static_cast<double>(field.value.siVal);
    case kUnsignedShort: return static_cast<double>(field.value.usVal);
    default: return std::nullopt;
  }
}

}  // namespace

struct Nvml::Api {
  // Required.
  nvmlReturn_t (*init)() = nullptr;
  nvmlReturn_t (*shutdown)() = nullptr;
  nvmlReturn_t (*get_count)(unsigned*) = nullptr;
  nvmlReturn_t (*get_handle)(unsigned, nvmlDevice_t*) = nullptr;
  nvmlReturn_t (*get_name)(nvmlDevice_t, char*, unsigned) = nullptr;
  nvmlReturn_t (*get_uuid)(nvmlDevice_t, char*, unsigned) = nullptr;
  nvmlReturn_t (*get_memory)(nvmlDevice_t, nvmlMemory_t*) = nullptr;
  // Optional.
  const char* (*error_string)(nvmlReturn_t) = nullptr;
  nvmlReturn_t (*get_field_values)(nvmlDevice_t, int, nvmlFieldValue_t*) = nullptr;
  nvmlReturn_t (*get_power_usage)(nvmlDevice_t, unsigned*) = nullptr;
  nvmlReturn_t (*get_energy)(nvmlDevice_t, unsigned long long*) = nullptr;
  nvmlReturn_t (*get_clock)(nvmlDevice_t, int, unsigned*) = nullptr;
  nvmlReturn_t (*get_temperature)(nvmlDevice_t, int, unsigned*) = nullptr;
  nvmlReturn_t (*get_utilization)(nvmlDevice_t, nvmlUtilization_t*) = nullptr;
  nvmlReturn_t (*get_throttle_reasons)(nvmlDevice_t, unsigned long long*) = nullptr;
  nvmlReturn_t (*get_pcie_gen)(nvmlDevice_t, unsigned*) = nullptr;
  nvmlReturn_t (*get_pcie_gen_max)(nvmlDevice_t, unsigned*) = nullptr;
  nvmlReturn_t (*get_pcie_width)(nvmlDevice_t, unsigned*) = nullptr;
  nvmlReturn_t (*get_pcie_width_max)(nvmlDevice_t, unsigned*) = nullptr;
  nvmlReturn_t (*get_max_clock)(nvmlDevice_t, int, unsigned*) = nullptr;
  nvmlReturn_t (*get_power_limit)(nvmlDevice_t, unsigned*) = nullptr;
  nvmlReturn_t (*get_ecc_errors)(nvmlDevice_t, int, int, unsigned long long*) = nullptr;
  nvmlReturn_t (*event_set_create)(nvmlEventSet_t*) = nullptr;
  nvmlReturn_t (*register_events)(nvmlDevice_t, unsigned long long, nvmlEventSet_t) = nullptr;
  nvmlReturn_t (*event_set_wait)(nvmlEventSet_t, nvmlEventData_t*, unsigned) = nullptr;
  nvmlReturn_t (*event_set_free)(nvmlEventSet_t) = nullptr;
  nvmlReturn_t (*get_driver_version)(char*, unsigned) = nullptr;
  nvmlReturn_t (*get_nvml_version)(char*, unsigned) = nullptr;
  nvmlReturn_t (*get_cuda_driver_version)(int*) = nullptr;

  std::string Error(nvmlReturn_t code) const {
    if (error_string != nullptr) {
      const char* text = error_string(code);
      if (text != nullptr) return absl::StrCat(text, " (", code, ")");
    }
    return absl::StrCat("NVML error ", code);
  }
};

absl::StatusOr<std::unique_ptr<Nvml>> Nvml::Open(const std::string& library) {
  dlerror();
  void* handle = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* error = dlerror();
    return absl::NotFoundError(
        absl::StrCat("cannot load ", library, ": ", error != nullptr ? error : "unknown"));
  }
  auto api = std::make_unique<Api>();
  const char* missing = nullptr;
  auto require = [&](const char* symbol, auto* out) {
    if (!Resolve(handle, symbol, out) && missing == nullptr) missing = symbol;
  };
  require("nvmlInit_v2", &api->init);
  require("nvmlShutdown", &api->shutdown);
  require("nvmlDeviceGetCount_v2", &api->get_count);
  require("nvmlDeviceGetHandleByIndex_v2", &api->get_handle);
  require("nvmlDeviceGetName", &api->get_name);
  require("nvmlDeviceGetUUID", &api->get_uuid);
  require("nvmlDeviceGetMemoryInfo", &api->get_memory);
  if (missing != nullptr) {
    dlclose(handle);
    return absl::NotFoundError(
        absl::StrCat(library, ": NVML symbol ", missing, " not found"));
  }
  Resolve(handle, "nvmlErrorString", &api->error_string);
  Resolve(handle, "nvmlDeviceGetFieldValues", &api->get_field_values);
  Resolve(handle, "nvmlDeviceGetPowerUsage", &api->get_power_usage);
  Resolve(handle, "nvmlDeviceGetTotalEnergyConsumption", &api->get_energy);
  Resolve(handle, "nvmlDeviceGetClockInfo", &api->get_clock);
  Resolve(handle, "nvmlDeviceGetTemperature", &api->get_temperature);
  Resolve(handle, "nvmlDeviceGetUtilizationRates", &api->get_utilization);
  Resolve(handle, "nvmlSystemGetDriverVersion", &api->get_driver_version);
  Resolve(handle, "nvmlSystemGetNVMLVersion", &api->get_nvml_version);
  if (!Resolve(handle, "nvmlSystemGetCudaDriverVersion_v2", &api->get_cuda_driver_version)) {
    Resolve(handle, "nvmlSystemGetCudaDriverVersion", &api->get_cuda_driver_version);
  }
  // Renamed in NVML 12.2 (driver 535); the old name stays exported.
  if (!Resolve(handle, "nvmlDeviceGetCurrentClocksEventReasons", &api->get_throttle_reasons)) {
    Resolve(handle, "nvmlDeviceGetCurrentClocksThrottleReasons", &api->get_throttle_reasons);
  }
  Resolve(handle, "nvmlDeviceGetCurrPcieLinkGeneration", &api->get_pcie_gen);
  Resolve(handle, "nvmlDeviceGetMaxPcieLinkGeneration", &api->get_pcie_gen_max);
  Resolve(handle, "nvmlDeviceGetCurrPcieLinkWidth", &api->get_pcie_width);
  Resolve(handle, "nvmlDeviceGetMaxPcieLinkWidth", &api->get_pcie_width_max);
  Resolve(handle, "nvmlDeviceGetMaxClockInfo", &api->get_max_clock);
  Resolve(handle, "nvmlDeviceGetEnforcedPowerLimit", &api->get_power_limit);
  Resolve(handle, "nvmlDeviceGetTotalEccErrors", &api->get_ecc_errors);
  Resolve(handle, "nvmlEventSetCreate", &api->event_set_create);
  Resolve(handle, "nvmlDeviceRegisterEvents", &api->register_events);
  if (!Resolve(handle, "nvmlEventSetWait_v2", &api->event_set_wait)) {
    Resolve(handle, "nvmlEventSetWait", &api->event_set_wait);  // before NVML 11 (R450)
  }
  Resolve(handle, "nvmlEventSetFree", &api->event_set_free);
  nvmlReturn_t rc = api->init();
  if (rc != kNvmlSuccess) {
    std::string error = api->Error(rc);
    dlclose(handle);
    return absl::UnavailableError(absl::StrCat(library, ": nvmlInit_v2: ", error));
  }
  auto nvml = std::unique_ptr<Nvml>(new Nvml(library, handle, std::move(api)));
  nvml->RegisterXidEvents();
  return nvml;
}

Nvml::Nvml(std::string library, void* handle, std::unique_ptr<Api> api)
    : library_(std::move(library)), handle_(handle), api_(std::move(api)) {}

Nvml::~Nvml() {
  if (xid_events_ != nullptr && api_->event_set_free != nullptr) {
    api_->event_set_free(static_cast<nvmlEventSet_t>(xid_events_));
  }
  api_->shutdown();
  dlclose(handle_);
}

void Nvml::RegisterXidEvents() {
  const Api& api = *api_;
  if (api.event_set_create == nullptr || api.register_events == nullptr ||
      api.event_set_wait == nullptr || api.event_set_free == nullptr) {
    return;
  }
  nvmlEventSet_t set = nullptr;
  if (api.event_set_create(&set) != kNvmlSuccess || set == nullptr) return;
  unsigned count = 0;
  if (api.get_count(&count) == kNvmlSuccess) {
    for (unsigned i = 0; i < count; ++i) {
      nvmlDevice_t device = nullptr;
      if (api.get_handle(i, &device) != kNvmlSuccess) continue;
      // NOT_SUPPORTED on GPUs without XID events (pre-Fermi, some vGPUs): no count there.
      if (api.register_events(device, kEventTypeXidCriticalError, set) == kNvmlSuccess) {
        xid_devices_[device] = static_cast<int>(i);
      }
    }
  }
  if (xid_devices_.empty()) {
    api.event_set_free(set);
    return;
  }
  xid_events_ = set;
  absl::MutexLock lock(&xid_mu_);
  for (const auto& [device, index] : xid_devices_) xid_counts_[index] = 0;
}

void Nvml::DrainXidEventsLocked() {
  if (xid_events_ == nullptr) return;
  // Bounded, so that a storm of events cannot hold a sampling tick forever.
  for (int i = 0; i < 1024; ++i) {
    nvmlEventData_t event{};
    if (api_->event_set_wait(static_cast<nvmlEventSet_t>(xid_events_), &event, 0) != kNvmlSuccess) {
      return;  // NVML_ERROR_TIMEOUT: none waiting (or an error: try again next tick)
    }
    if ((event.eventType & kEventTypeXidCriticalError) == 0) continue;
    auto it = xid_devices_.find(event.device);
    if (it != xid_devices_.end()) ++xid_counts_[it->second];
  }
}

std::map<std::string, std::string> Nvml::SystemVersions() const {
  std::map<std::string, std::string> versions;
  char buffer[kNvmlStringBuffer] = {};
  if (api_->get_driver_version != nullptr &&
      api_->get_driver_version(buffer, sizeof(buffer)) == kNvmlSuccess && buffer[0] != '\0') {
    versions["driver"] = buffer;
  }
  char nvml[kNvmlStringBuffer] = {};
  if (api_->get_nvml_version != nullptr &&
      api_->get_nvml_version(nvml, sizeof(nvml)) == kNvmlSuccess && nvml[0] != '\0') {
    versions["nvml"] = nvml;
  }
  int cuda = 0;
  if (api_->get_cuda_driver_version != nullptr &&
      api_->get_cuda_driver_version(&cuda) == kNvmlSuccess && cuda > 0) {
    versions["cuda_driver"] = absl::StrCat(cuda / 1000, ".", (cuda % 1000) / 10);
  }
  return versions;
}

absl::StatusOr<std::vector<GpuInfo>> Nvml::ListGpus() const {
  unsigned count = 0;
  nvmlReturn_t rc = api_->get_count(&count);
  if (rc != kNvmlSuccess) {
    return absl::UnavailableError(absl::StrCat("nvmlDeviceGetCount_v2: ", api_->Error(rc)));
  }
  std::vector<GpuInfo> gpus;
  for (unsigned i = 0; i < count; ++i) {
    nvmlDevice_t device = nullptr;
    rc = api_->get_handle(i, &device);
    if (rc != kNvmlSuccess) {
      return absl::UnavailableError(
          absl::StrCat("nvmlDeviceGetHandleByIndex_v2(", i, "): ", api_->Error(rc)));
    }
    GpuInfo gpu;
    gpu.index = static_cast<int>(i);
    char name[kNvmlStringBuffer] = {};
    if (api_->get_name(device, name, sizeof(name)) == kNvmlSuccess) gpu.name = name;
    char uuid[kNvmlStringBuffer] = {};
    if (api_->get_uuid(device, uuid, sizeof(uuid)) == kNvmlSuccess) gpu.uuid = uuid;
    nvmlMemory_t memory{};
    if (api_->get_memory(device, &memory) == kNvmlSuccess) {
      gpu.memory_bytes = static_cast<int64_t>(memory.total);
    }
    gpus.push_back(std::move(gpu));
  }
  return gpus;
}

GpuReading Nvml::Read(int gpu_index) {
  GpuReading reading;
  nvmlDevice_t device = nullptr;
  if (gpu_index < 0 ||
      api_->get_handle(static_cast<unsigned>(gpu_index), &device) != kNvmlSuccess) {
    return reading;
  }
  const Api& api = *api_;
  if (api.get_field_values != nullptr) {
    nvmlFieldValue_t field{};
    field.fieldId = kFieldPowerInstant;
    if (api.get_field_values(device, 1, &field) == kNvmlSuccess &&
        field.nvmlReturn == kNvmlSuccess) {
      if (auto milliwatts = FieldAsDouble(field)) reading.power_w = *milliwatts / 1000.0;
    }
  }
  unsigned value = 0;
  if (api.get_power_usage != nullptr && api.get_power_usage(device, &value) == kNvmlSuccess) {
    reading.power_average_w = value / 1000.0;
  }
  unsigned long long wide = 0;
  if (api.get_energy != nullptr && api.get_energy(device, &wide) == kNvmlSuccess) {
    reading.energy_j = static_cast<double>(wide) / 1000.0;
  }
  if (api.get_clock != nullptr) {
    if (api.get_clock(device, kClockSm, &value) == kNvmlSuccess) reading.sm_clock_mhz = value;
    if (api.get_clock(device, kClockMem, &value) == kNvmlSuccess) {
      reading.memory_clock_mhz = value;
    }
  }
  if (api.get_temperature != nullptr &&
      api.get_temperature(device, kTemperatureGpu, &value) == kNvmlSuccess) {
    reading.temperature_c = value;
  }
  nvmlUtilization_t utilization{};
  if (api.get_utilization != nullptr &&
      api.get_utilization(device, &utilization) == kNvmlSuccess) {
    reading.gpu_utilization_pct = utilization.gpu;
    reading.memory_utilization_pct = utilization.memory;
  }
  nvmlMemory_t memory{};
  if (api.get_memory(device, &memory) == kNvmlSuccess) {
    reading.memory_used_bytes = static_cast<int64_t>(memory.used);
  }
  if (api.get_throttle_reasons != nullptr &&
      api.get_throttle_reasons(device, &wide) == kNvmlSuccess) {
    reading.throttle_reasons = static_cast<uint64_t>(wide);
  }
  auto read_int = [&](nvmlReturn_t (*get)(nvmlDevice_t, unsigned*), std::optional<int>* out) {
    unsigned number = 0;
    if (get != nullptr && get(device, &number) == kNvmlSuccess) *out = static_cast<int>(number);
  };
  read_int(api.get_pcie_gen, &reading.pcie_gen);
  read_int(api.get_pcie_gen_max, &reading.pcie_gen_max);
  read_int(api.get_pcie_width, &reading.pcie_width);
  read_int(api.get_pcie_width_max, &reading.pcie_width_max);
  if (api.get_max_clock != nullptr) {
    if (api.get_max_clock(device, kClockSm, &value) == kNvmlSuccess) {
      reading.max_sm_clock_mhz = value;
    }
    if (api.get_max_clock(device, kClockMem, &value) == kNvmlSuccess) {
      reading.max_memory_clock_mhz = value;
    }
  }
  if (api.get_power_limit != nullptr && api.get_power_limit(device, &value) == kNvmlSuccess) {
    reading.power_limit_w = value / 1000.0;  // mW
  }
  if (api.get_ecc_errors != nullptr) {
    // NOT_SUPPORTED where ECC is off or absent (GeForce): left unset.
    if (api.get_ecc_errors(device, kMemoryErrorCorrected, kVolatileEcc, &wide) == kNvmlSuccess) {
      reading.ecc_corrected = static_cast<int64_t>(wide);
    }
    if (api.get_ecc_errors(device, kMemoryErrorUncorrected, kVolatileEcc, &wide) == kNvmlSuccess) {
      reading.ecc_uncorrected = static_cast<int64_t>(wide);
    }
  }
  {
    absl::MutexLock lock(&xid_mu_);
    DrainXidEventsLocked();
    auto it = xid_counts_.find(gpu_index);
    if (it != xid_counts_.end()) reading.xid_errors = it->second;
  }
  return reading;
}

}  // namespace bench::agent
