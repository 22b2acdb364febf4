// What this node offers: GPUs found through NVML (loaded at run time, so the agent
// builds and runs without the NVIDIA driver), or CPU slots.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "benchfleet/v1/types.pb.h"
#include "worker/agent/nvml.h"

namespace bench::agent {

// Opens an Nvml session on `library` (a file name searched the usual way, or a path),
// lists the GPUs and closes the session again. NOT_FOUND if the library or one of
// its symbols is missing; UNAVAILABLE if NVML fails (e.g. no driver). An empty vector
// means NVML works but sees no GPU. Thread-safe (NVML serialises itself).
absl::StatusOr<std::vector<GpuInfo>> ListNvmlGpus(const std::string& library);

struct InventoryOptions {
  std::string name;          // empty: the host name
  std::string address;       // empty: DefaultAdvertisedAddress(controller)
  std::string controller;    // HOST:PORT, used only for the default address
  int cpu_slots = 0;         // > 0: offer this many CPU slots and no GPU
  std::string nvml_library = kDefaultNvmlLibrary;
};

// Fills the inventory: with cpu_slots > 0 that many CPU slots; otherwise the GPUs that
// NVML lists, or 1 CPU slot where NVML is missing, fails or lists none (logged).
benchfleet::v1::AgentInventory BuildInventory(const InventoryOptions& options);

// The host name (gethostname), "localhost" if that fails.
std::string HostName();

// True if the host part of `target` ("HOST:PORT", "[v6]:PORT", optionally with a gRPC
// scheme such as "dns:///" or "ipv4:") is localhost or a loopback literal.
bool IsLoopbackTarget(absl::string_view target);

// Where other nodes reach this one: 127.0.0.1 when the controller is on loopback
// (everything runs on this host), else the host name.
std::string DefaultAdvertisedAddress(absl::string_view controller);

}  // namespace bench::agent
