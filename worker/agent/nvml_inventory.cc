#include "worker/agent/nvml_inventory.h"

#include <dlfcn.h>
#include <limits.h>
#include <unistd.h>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "worker/agent/agent_log.h"

namespace bench::agent {
namespace {

// The few NVML declarations we need (ABI from nvml.h; stable since the _v2 entry points).
using nvmlReturn_t = int;
constexpr nvmlReturn_t kNvmlSuccess = 0;
struct nvmlDevice_st;
using nvmlDevice_t = nvmlDevice_st*;
struct nvmlMemory_t {
  unsigned long long total;
  unsigned long long free;
  unsigned long long used;
};
constexpr unsigned kNvmlStringBuffer = 256;  // >= NVML's *_V2_BUFFER_SIZE (96)

struct NvmlApi {
  nvmlReturn_t (*init)() = nullptr;
  nvmlReturn_t (*shutdown)() = nullptr;
  nvmlReturn_t (*get_count)(unsigned*) = nullptr;
  nvmlReturn_t (*get_handle)(unsigned, nvmlDevice_t*) = nullptr;
  nvmlReturn_t (*get_name)(nvmlDevice_t, char*, unsigned) = nullptr;
  nvmlReturn_t (*get_uuid)(nvmlDevice_t, char*, unsigned) = nullptr;
  nvmlReturn_t (*get_memory)(nvmlDevice_t, nvmlMemory_t*) = nullptr;
  const char* (*error_string)(nvmlReturn_t) = nullptr;  // optional
};

class Library {
 public:
  explicit Library(void* handle) : handle_(handle) {}
  ~Library() {
    if (handle_ != nullptr) dlclose(handle_);
  }
  Library(const Library&) = delete;
  Library& operator=(const Library&) = delete;
  void* get() const { return handle_; }

 private:
  void* handle_;
};

template <typename Fn>
absl::Status Resolve(void* handle, const char* symbol, Fn* out) {
  void* address = dlsym(handle, symbol);
  if (address == nullptr) {
    return absl::NotFoundError(absl::StrCat("NVML symbol ", symbol, " not found"));
  }
  *out = reinterpret_cast<Fn>(address);
  return absl::OkStatus();
}

std::string NvmlError(const NvmlApi& api, nvmlReturn_t code) {
  if (api.error_string != nullptr) {
    const char* text = api.error_string(code);
    if (text != nullptr) return absl::StrCat(text, " (", code, ")");
  }
  return absl::StrCat("NVML error ", code);
}

absl::StatusOr<std::vector<GpuInfo>> ListWith(const NvmlApi& api) {
  nvmlReturn_t rc = api.init();
  if (rc != kNvmlSuccess) {
    return absl::UnavailableError(absl::StrCat("nvmlInit_v2: ", NvmlError(api, rc)));
  }
  std::vector<GpuInfo> gpus;
  absl::Status status;
  unsigned count = 0;
  rc = api.get_count(&count);
  if (rc != kNvmlSuccess) {
    status = absl::UnavailableError(absl::StrCat("nvmlDeviceGetCount_v2: ", NvmlError(api, rc)));
    count = 0;
  }
  for (unsigned i = 0; i < count && status.ok(); ++i) {
    nvmlDevice_t device = nullptr;
    rc = api.get_handle(i, &device);
    if (rc != kNvmlSuccess) {
      status = absl::UnavailableError(
          absl::StrCat("nvmlDeviceGetHandleByIndex_v2(", i, "): ", NvmlError(api, rc)));
      break;
    }
    GpuInfo gpu;
    gpu.index = static_cast<int>(i);
    char buffer[kNvmlStringBuffer] = {};
    if (api.get_name(device, buffer, sizeof(buffer)) == kNvmlSuccess) gpu.name = buffer;
    char uuid[kNvmlStringBuffer] = {};
    if (api.get_uuid(device, uuid, sizeof(uuid)) == kNvmlSuccess) gpu.uuid = uuid;
    nvmlMemory_t memory{};
    if (api.get_memory(device, &memory) == kNvmlSuccess) {
      gpu.memory_bytes = static_cast<int64_t>(memory.total);
    }
    gpus.push_back(std::move(gpu));
  }
  api.shutdown();
  if (!status.ok()) return status;
  return gpus;
}

}  // namespace

absl::StatusOr<std::vector<GpuInfo>> ListNvmlGpus(const std::string& library) {
  dlerror();
  Library handle(dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL));
  if (handle.get() == nullptr) {
    const char* error = dlerror();
    return absl::NotFoundError(
        absl::StrCat("cannot load ", library, ": ", error != nullptr ? error : "unknown"));
  }
  NvmlApi api;
  for (absl::Status status :
       {Resolve(handle.get(), "nvmlInit_v2", &api.init),
        Resolve(handle.get(), "nvmlShutdown", &api.shutdown),
        Resolve(handle.get(), "nvmlDeviceGetCount_v2", &api.get_count),
        Resolve(handle.get(), "nvmlDeviceGetHandleByIndex_v2", &api.get_handle),
        Resolve(handle.get(), "nvmlDeviceGetName", &api.get_name),
        Resolve(handle.get(), "nvmlDeviceGetUUID", &api.get_uuid),
        Resolve(handle.get(), "nvmlDeviceGetMemoryInfo", &api.get_memory)}) {
    if (!status.ok()) {
      return absl::NotFoundError(absl::StrCat(library, ": ", status.message()));
    }
  }
  (void)Resolve(handle.get(), "nvmlErrorString", &api.error_string);
  return ListWith(api);
}

benchfleet::v1::AgentInventory BuildInventory(const InventoryOptions& options) {
  benchfleet::v1::AgentInventory inventory;
  inventory.set_hostname(HostName());
  inventory.set_name(options.name.empty() ? inventory.hostname() : options.name);
  inventory.set_address(options.address.empty()
                            ? DefaultAdvertisedAddress(options.controller)
                            : options.address);
  if (options.cpu_slots > 0) {
    inventory.set_cpu_slots(options.cpu_slots);
    return inventory;
  }
  auto gpus = ListNvmlGpus(options.nvml_library);
  if (!gpus.ok()) {
    AgentLog(absl::StrCat("no GPUs (", gpus.status().message(), "); offering 1 CPU slot"));
  } else if (gpus->empty()) {
    AgentLog("NVML lists no GPU; offering 1 CPU slot");
  }
  if (!gpus.ok() || gpus->empty()) {
    inventory.set_cpu_slots(1);
    return inventory;
  }
  for (const GpuInfo& info : *gpus) {
    benchfleet::v1::Gpu* gpu = inventory.add_gpus();
    gpu->set_index(info.index);
    gpu->set_name(info.name);
    gpu->set_uuid(info.uuid);
    gpu->set_memory_bytes(info.memory_bytes);
  }
  return inventory;
}

std::string HostName() {
  char name[HOST_NAME_MAX + 1] = {};
  if (gethostname(name, sizeof(name) - 1) != 0 || name[0] == '\0') return "localhost";
  return name;
}

bool IsLoopbackTarget(absl::string_view target) {
  for (absl::string_view scheme : {"dns:///", "dns:", "ipv4:", "ipv6:"}) {
    if (absl::ConsumePrefix(&target, scheme)) break;
  }
  absl::string_view host = target;
  if (absl::ConsumePrefix(&host, "[")) {
    host = host.substr(0, host.find(']'));
  } else if (size_t colon = host.rfind(':'); colon != absl::string_view::npos &&
                                             host.find(':') == colon) {
    host = host.substr(0, colon);  // HOST:PORT (a bare v6 literal has several colons)
  }
  return absl::EqualsIgnoreCase(host, "localhost") || absl::StartsWith(host, "127.") ||
         host == "::1";
}

std::string DefaultAdvertisedAddress(absl::string_view controller) {
  return IsLoopbackTarget(controller) ? "127.0.0.1" : HostName();
}

}  // namespace bench::agent
