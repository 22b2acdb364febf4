#include "worker/agent/nvml_inventory.h"

#include <limits.h>
#include <unistd.h>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "common/log.h"

namespace bench::agent {

absl::StatusOr<std::vector<GpuInfo>> ListNvmlGpus(const std::string& library) {
  auto nvml = Nvml::Open(library);
  if (!nvml.ok()) return nvml.status();
  return (*nvml)->ListGpus();
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
  auto nvml = Nvml::Open(options.nvml_library);
  absl::StatusOr<std::vector<GpuInfo>> gpus =
      nvml.ok() ? (*nvml)->ListGpus() : absl::StatusOr<std::vector<GpuInfo>>(nvml.status());
  if (!gpus.ok()) {
    Log("no GPUs (", gpus.status().message(), "); offering 1 CPU slot");
  } else if (gpus->empty()) {
    Log("NVML lists no GPU; offering 1 CPU slot");
  }
  if (!gpus.ok() || gpus->empty()) {
    inventory.set_cpu_slots(1);
    return inventory;
  }
  for (const auto& [key, value] : (*nvml)->SystemVersions()) {
    (*inventory.mutable_versions())[key] = value;
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
