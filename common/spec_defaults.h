// What a job spec means where it leaves a field out: decided once here, for benchctl
// (ctl/args.cc, ctl/command_table.cc), benchd (server/core/spec_validation.cc) and bench-train's
// own flags (worker/train/options.h).
//
// Who fills what (a spec means the same thing whichever entry point filled it):
//   - benchctl fills model, precision, iterations, warm-up and image size with the values
//     below before it submits (they show in its help); benchd requires them, as it
//     always has (a v1 client that leaves them out gets INVALID_ARGUMENT naming the field).
//   - benchd fills data (kDefaultData) and devices from the placement shape
//     (DevicesOfShape); benchctl leaves data unset for benchd to fill.
//
// Standard library only: bench-train includes it.
#pragma once

#include <cstdint>

#include "common/names.h"

namespace bench {

inline constexpr const char* kDefaultModel = "resnet50";
inline constexpr const char* kDefaultPrecision = kPrecisionFp32;
inline constexpr int kDefaultIterations = 100;  // warm-up included
inline constexpr int kDefaultWarmupIterations = 10;
inline constexpr int kDefaultImageSize = 224;
inline constexpr const char* kDefaultData = kDataSynthetic;

// The devices of a placement shape: `nodes` agents × `devices_per_node` ranks each, in
// 64 bits (no overflow). A spec that gives the shape and devices must make them agree.
constexpr int64_t ShapeDevices(int32_t nodes, int32_t devices_per_node) {
  return int64_t{nodes} * devices_per_node;
}

// The devices a spec with devices left at 0 gets from its shape: nodes × devices_per_node
// when both are positive and the product is at most `max_devices`; 0 otherwise (nothing
// to fill in: validation then refuses the spec).
constexpr int32_t DevicesOfShape(int32_t nodes, int32_t devices_per_node,
                                 int32_t max_devices = INT32_MAX) {
  if (nodes <= 0 || devices_per_node <= 0) return 0;
  const int64_t devices = ShapeDevices(nodes, devices_per_node);
  return devices <= max_devices ? static_cast<int32_t>(devices) : 0;
}

}  // namespace bench
