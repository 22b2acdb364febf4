// One GPU of a node as its agent found it through NVML: the one type for it on both sides of
// the v1 API's `Gpu` message. bench-agent lists them (worker/agent/nvml.h, Nvml::ListGpus)
// and sends them in its inventory (worker/agent/nvml_inventory.cc); benchd keeps them in its
// domain AgentInventory (server/core/job.h, where it is also called `Gpu`) through
// server/rpc/proto_convert.cc. Plain data, standard library only.
#pragma once

#include <cstdint>
#include <string>

namespace bench {

struct GpuInfo {
  int index = 0;             // NVML's index, in PCI bus order
  std::string name;          // e.g. "NVIDIA H100 80GB HBM3"; empty where NVML gave none
  std::string uuid;          // e.g. "GPU-8f0c..."; empty where NVML gave none
  int64_t memory_bytes = 0;  // total memory; 0 where NVML gave none
};

}  // namespace bench
