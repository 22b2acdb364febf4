// The bounds an agent's inventory must keep to be registered (docs/limits.md, "Agent
// inventories and samples"): a node name of 1-63 bytes of [A-Za-z0-9._-] starting with a
// letter or digit, unique non-negative GPU indexes, unique non-empty GPU UUIDs, at most
// kMaxGpus GPUs and kMaxCpuSlots CPU slots, bounded labels and strings. Pure: no state.
#pragma once

#include <string>

#include "absl/status/status.h"
#include "server/core/job.h"

namespace bench {

inline constexpr size_t kMaxNodeNameBytes = 63;
inline constexpr int kMaxCpuSlots = 4096;
inline constexpr int kMaxGpus = 64;
inline constexpr size_t kMaxGpuUuidBytes = 128;
inline constexpr size_t kMaxGpuNameBytes = 256;
inline constexpr size_t kMaxInventoryLabels = 64;
inline constexpr size_t kMaxLabelKeyBytes = 63;
inline constexpr size_t kMaxLabelValueBytes = 256;
inline constexpr size_t kMaxInventoryVersions = 32;
inline constexpr size_t kMaxInventoryTextBytes = 256;  // address, hostname, versions

// OK when `name` is a valid node name; INVALID_ARGUMENT naming `field` otherwise.
absl::Status ValidateNodeName(const std::string& name, const std::string& field);

// OK when the (already named) inventory keeps every bound; INVALID_ARGUMENT naming the
// field and the limit, quoting at most a short prefix of the value, otherwise.
absl::Status ValidateInventory(const AgentInventory& inventory);

}  // namespace bench
