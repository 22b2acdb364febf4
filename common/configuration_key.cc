#include "common/configuration_key.h"

#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/names.h"
#include "common/quote.h"

namespace bench {
namespace {

constexpr Precision kPrecisions[] = {Precision::kFp32, Precision::kAmp, Precision::kTf32,
                                     Precision::kBf16};

// Quoted and escaped (common/quote.h), so that an odd name still reads as one field.
std::string Quoted(const std::string& text) { return QuotePrefix(text, 256); }

}  // namespace

const char* PrecisionText(Precision precision) {
  switch (precision) {
    case Precision::kFp32: return kPrecisionFp32;
    case Precision::kAmp: return kPrecisionAmp;
    case Precision::kTf32: return kPrecisionTf32;
    case Precision::kBf16: return kPrecisionBf16;
    case Precision::kUnspecified: break;
  }
  return kPrecisionUnspecified;
}

const char* DeviceKindText(DeviceKind kind) {
  switch (kind) {
    case DeviceKind::kCuda: return "cuda";
    case DeviceKind::kCpu: return "cpu";
    case DeviceKind::kNone: break;
  }
  return "";
}

std::optional<Precision> PrecisionFromText(std::string_view text) {
  for (Precision precision : kPrecisions) {
    if (text == PrecisionText(precision)) return precision;
  }
  return std::nullopt;
}

DeviceKind DeviceKindFromText(std::string_view text) {
  if (text == DeviceKindText(DeviceKind::kCuda)) return DeviceKind::kCuda;
  if (text == DeviceKindText(DeviceKind::kCpu)) return DeviceKind::kCpu;
  return DeviceKind::kNone;
}

std::string ConfigurationKey::ToString() const {
  return ConfigurationFilter::Exactly(*this).ToString();
}

ConfigurationFilter ConfigurationFilter::Exactly(const ConfigurationKey& key) {
  return ConfigurationFilter{key.model,       key.devices,   key.precision,  key.batch_size,
                             key.device_kind, key.gpu_model, key.image_size, key.simulated};
}

bool ConfigurationFilter::Matches(const ConfigurationKey& key) const {
  return (!model || *model == key.model) && (!devices || *devices == key.devices) &&
         (!precision || *precision == key.precision) &&
         (!batch_size || *batch_size == key.batch_size) &&
         (!device_kind || *device_kind == key.device_kind) &&
         (!gpu_model || *gpu_model == key.gpu_model) &&
         (!image_size || *image_size == key.image_size) && simulated == key.simulated;
}

bool ConfigurationFilter::empty() const {
  return !model && !devices && !precision && !batch_size && !device_kind && !gpu_model &&
         !image_size;
}

std::string ConfigurationFilter::ToString() const {
  std::vector<std::string> fields;
  if (model) fields.push_back(absl::StrCat("model=", Quoted(*model)));
  if (devices) fields.push_back(absl::StrCat("devices=", *devices));
  if (precision) fields.push_back(absl::StrCat("precision=", PrecisionText(*precision)));
  if (batch_size) fields.push_back(absl::StrCat("batch_size=", *batch_size));
  if (device_kind) {
    const char* kind = DeviceKindText(*device_kind);
    fields.push_back(absl::StrCat("device_kind=", *kind ? kind : "\"\""));
  }
  if (gpu_model) fields.push_back(absl::StrCat("gpu_model=", Quoted(*gpu_model)));
  if (image_size) fields.push_back(absl::StrCat("image_size=", *image_size));
  if (simulated) fields.push_back("simulated");
  if (fields.empty()) return "any configuration";
  return absl::StrJoin(fields, " ");
}

}  // namespace bench
