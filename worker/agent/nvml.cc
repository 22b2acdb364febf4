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
  nvmlReturn_t rc = api->init();
  if (rc != kNvmlSuccess) {
    std::string error = api->Error(rc);
    dlclose(handle);
    return absl::UnavailableError(absl::StrCat(library, ": nvmlInit_v2: ", error));
  }
  return std::unique_ptr<Nvml>(new Nvml(library, handle, std::move(api)));
}

Nvml::Nvml(std::string library, void* handle, std::unique_ptr<Api> api)
    : library_(std::move(library)), handle_(handle), api_(std::move(api)) {}

Nvml::~Nvml() {
  api_->shutdown();
  dlclose(handle_);
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
  return reading;
}

}  // namespace bench::agent
