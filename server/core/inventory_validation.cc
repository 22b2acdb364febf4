#include "server/core/inventory_validation.h"

#include <set>
#include <string>

#include "absl/strings/str_cat.h"
#include "common/quote.h"

namespace bench {
namespace {

bool NameByte(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
         c == '_' || c == '-';
}

bool HasControlByte(const std::string& text) {
  for (char c : text) {
    unsigned char u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7f) return true;
  }
  return false;
}

// A bounded free-text field without control bytes.
absl::Status CheckText(const std::string& value, size_t max_bytes, const std::string& field) {
  if (value.size() > max_bytes) {
    return absl::InvalidArgumentError(absl::StrCat(
        field, " is ", value.size(), " bytes; the limit is ", max_bytes, ": ", QuotePrefix(value)));
  }
  if (HasControlByte(value)) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, " must not hold control bytes: ", QuotePrefix(value)));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ValidateNodeName(const std::string& name, const std::string& field) {
  if (name.empty() || name.size() > kMaxNodeNameBytes) {
    return absl::InvalidArgumentError(absl::StrCat(field, " must be 1-", kMaxNodeNameBytes,
                                                   " bytes (it is ", name.size(),
                                                   "): ", QuotePrefix(name)));
  }
  bool first_ok = (name[0] >= 'a' && name[0] <= 'z') || (name[0] >= 'A' && name[0] <= 'Z') ||
                  (name[0] >= '0' && name[0] <= '9');
  bool all_ok = true;
  for (char c : name) all_ok = all_ok && NameByte(c);
  if (!first_ok || !all_ok) {
    return absl::InvalidArgumentError(absl::StrCat(
        field, " must be [A-Za-z0-9._-] starting with a letter or digit: ", QuotePrefix(name)));
  }
  return absl::OkStatus();
}

absl::Status ValidateInventory(const AgentInventory& inventory) {
  if (absl::Status name = ValidateNodeName(inventory.name, "inventory.name"); !name.ok()) {
    return name;
  }
  if (absl::Status s = CheckText(inventory.address, kMaxInventoryTextBytes, "inventory.address");
      !s.ok()) {
    return s;
  }
  if (absl::Status s = CheckText(inventory.hostname, kMaxInventoryTextBytes, "inventory.hostname");
      !s.ok()) {
    return s;
  }
  if (inventory.cpu_slots < 0 || inventory.cpu_slots > kMaxCpuSlots) {
    return absl::InvalidArgumentError(absl::StrCat("inventory.cpu_slots is ", inventory.cpu_slots,
                                                   "; it must be 0-", kMaxCpuSlots));
  }
  if (inventory.gpus.size() > static_cast<size_t>(kMaxGpus)) {
    return absl::InvalidArgumentError(absl::StrCat("inventory.gpus lists ", inventory.gpus.size(),
                                                   " GPUs; the limit is ", kMaxGpus));
  }
  std::set<int> indexes;
  std::set<std::string> uuids;
  for (size_t i = 0; i < inventory.gpus.size(); ++i) {
    const Gpu& gpu = inventory.gpus[i];
    std::string field = absl::StrCat("inventory.gpus[", i, "]");
    if (gpu.index < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(field, ".index is ", gpu.index, "; it must not be negative"));
    }
    if (!indexes.insert(gpu.index).second) {
      return absl::InvalidArgumentError(
          absl::StrCat(field, ".index ", gpu.index, " is listed twice"));
    }
    if (gpu.uuid.empty()) {
      return absl::InvalidArgumentError(absl::StrCat(field, ".uuid is empty"));
    }
    if (absl::Status s = CheckText(gpu.uuid, kMaxGpuUuidBytes, field + ".uuid"); !s.ok()) return s;
    if (!uuids.insert(gpu.uuid).second) {
      return absl::InvalidArgumentError(
          absl::StrCat(field, ".uuid is listed twice: ", QuotePrefix(gpu.uuid)));
    }
    if (absl::Status s = CheckText(gpu.name, kMaxGpuNameBytes, field + ".name"); !s.ok()) return s;
    if (gpu.memory_bytes < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(field, ".memory_bytes is ", gpu.memory_bytes, "; it must not be negative"));
    }
  }
  if (inventory.labels.size() > kMaxInventoryLabels) {
    return absl::InvalidArgumentError(absl::StrCat("inventory.labels holds ",
                                                   inventory.labels.size(),
                                                   " labels; the limit is ", kMaxInventoryLabels));
  }
  for (const auto& [key, value] : inventory.labels) {
    if (key.empty()) return absl::InvalidArgumentError("inventory.labels: a label key is empty");
    if (absl::Status s = CheckText(key, kMaxLabelKeyBytes, "inventory.labels key"); !s.ok()) {
      return s;
    }
    if (absl::Status s = CheckText(value, kMaxLabelValueBytes,
                                   absl::StrCat("inventory.labels[", QuotePrefix(key), "]"));
        !s.ok()) {
      return s;
    }
  }
  if (inventory.versions.size() > kMaxInventoryVersions) {
    return absl::InvalidArgumentError(
        absl::StrCat("inventory.versions holds ", inventory.versions.size(),
                     " entries; the limit is ", kMaxInventoryVersions));
  }
  for (const auto& [key, value] : inventory.versions) {
    if (absl::Status s = CheckText(key, kMaxInventoryTextBytes, "inventory.versions key");
        !s.ok()) {
      return s;
    }
    if (absl::Status s = CheckText(value, kMaxInventoryTextBytes,
                                   absl::StrCat("inventory.versions[", QuotePrefix(key), "]"));
        !s.ok()) {
      return s;
    }
  }
  return absl::OkStatus();
}

}  // namespace bench
