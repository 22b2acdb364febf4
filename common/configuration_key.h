// What results are comparable across, defined once: a ConfigurationKey is (model, devices,
// precision, batch size, device kind, GPU model, image size, simulated). benchd groups its results
// grid, its baselines (the baselines table's primary key) and its per-GPU variability by
// it; report/ groups the grids and finds the 1-device cell of a scaling figure by it. A
// ConfigurationFilter is a key with some fields unset: "model=resnet50 devices=8" matches
// every configuration with that model and device count. Simulated figures (bench-sim-train,
// issue 26) are never comparable with real ones: `simulated` is part of the key, and a
// filter always selects one kind (real unless it says simulated).
//
// Ordering: by the fields in the order above (precision and device kind by their enum
// order below), the order of benchd's results cells and baselines lists.
//
// Protobuf- and gRPC-free (common/spec_names.h maps names to the v1 API's enums).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <tuple>

namespace bench {

enum class Precision { kUnspecified, kFp32, kAmp, kTf32, kBf16 };
enum class DeviceKind { kNone, kCuda, kCpu };

// common/names.h's names: "fp32", "amp", "tf32", "bf16"; "unspecified".
const char* PrecisionText(Precision precision);
// "cuda", "cpu"; "" for kNone (not placed yet, or unknown).
const char* DeviceKindText(DeviceKind kind);
// PrecisionText's inverse; nullopt for anything else ("unspecified" included).
std::optional<Precision> PrecisionFromText(std::string_view text);
// "cuda" and "cpu"; anything else is kNone.
DeviceKind DeviceKindFromText(std::string_view text);

struct ConfigurationKey {
  std::string model;
  int devices = 0;
  Precision precision = Precision::kUnspecified;
  int batch_size = 0;
  DeviceKind device_kind = DeviceKind::kNone;  // kNone: not placed yet
  std::string gpu_model;                       // "" on CPU slots or when unknown
  int image_size = 0;
  bool simulated = false;  // its jobs ran on bench-sim-train

  auto Tie() const {
    return std::tie(model, devices, precision, batch_size, device_kind, gpu_model, image_size,
                    simulated);
  }
  bool operator<(const ConfigurationKey& o) const { return Tie() < o.Tie(); }
  bool operator==(const ConfigurationKey& o) const { return Tie() == o.Tie(); }
  bool operator!=(const ConfigurationKey& o) const { return !(*this == o); }

  // For messages and test failures: every field, e.g. `model="resnet50" devices=8
  // precision=fp32 batch_size=256 device_kind=cuda gpu_model="NVIDIA A100" image_size=224`
  // (device_kind="" when kNone), then `simulated` for a simulated one.
  std::string ToString() const;
};

// A partial key: each set field must equal the key's; unset fields match anything.
struct ConfigurationFilter {
  std::optional<std::string> model;
  std::optional<int> devices;
  std::optional<Precision> precision;
  std::optional<int> batch_size;
  std::optional<DeviceKind> device_kind;
  std::optional<std::string> gpu_model;  // "" is a value: only keys without a GPU model
  std::optional<int> image_size;
  // Not optional: a filter matches real keys only, or (true) simulated keys only.
  bool simulated = false;

  // Every field of `key` set.
  static ConfigurationFilter Exactly(const ConfigurationKey& key);

  bool Matches(const ConfigurationKey& key) const;
  bool empty() const;  // no optional field set: matches every key of its kind (simulated)
  // The set fields as ToString writes them, in the key's order; "any configuration" when
  // empty.
  std::string ToString() const;
};

}  // namespace bench
