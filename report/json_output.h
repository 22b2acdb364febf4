// The JSON of benchctl --format json and of benchd's web API (docs/web-api.md): protobuf's
// JSON mapping with the proto field names
// (snake_case) and every field printed, defaults included, so scripts see a stable shape.
// int64 fields are JSON strings, enums their names, as the mapping defines.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "google/protobuf/message.h"

namespace bench::report {

// One message as a single-line JSON object, ending in '\n'.
std::string ToJson(const google::protobuf::Message& message);

// A JSON array, one message per line ("[]\n" when empty).
template <typename M>
std::string ToJsonArray(const std::vector<M>& messages) {
  if (messages.empty()) return "[]\n";
  std::string out = "[\n";
  for (size_t i = 0; i < messages.size(); ++i) {
    std::string item = ToJson(messages[i]);
    item.pop_back();
    out += "  " + item + (i + 1 < messages.size() ? ",\n" : "\n");
  }
  return out + "]\n";
}

// `text` as a JSON string literal, quotes included.
std::string JsonQuote(absl::string_view text);
// A number as JSON: up to 10 significant digits; NaN and infinities become null.
std::string JsonNumber(double value);
// As the proto3 JSON mapping writes a double: JsonNumber when finite, else the strings
// "NaN", "Infinity", "-Infinity" (JSON has no such numbers; Python's float() reads them).
std::string JsonDouble(double value);

// Builds one JSON object with its keys in insertion order (log formats read best with
// "timestamp" first). Keys are not checked for duplicates.
class JsonObject {
 public:
  JsonObject& Add(absl::string_view key, absl::string_view text);
  JsonObject& Add(absl::string_view key, const char* text) {
    return Add(key, absl::string_view(text));
  }
  JsonObject& Add(absl::string_view key, double value);
  JsonObject& Add(absl::string_view key, int64_t value);
  JsonObject& Add(absl::string_view key, int value) {
    return Add(key, static_cast<int64_t>(value));
  }
  JsonObject& Add(absl::string_view key, bool value);
  // `json` must already be valid JSON (an object, array, number or literal).
  JsonObject& AddRaw(absl::string_view key, absl::string_view json);
  // null when nullopt.
  JsonObject& AddOptional(absl::string_view key, const std::optional<double>& value);
  bool empty() const { return fields_.empty(); }
  // "{...}" without a newline.
  std::string Build() const;

 private:
  std::vector<std::string> fields_;
};

}  // namespace bench::report
