#include "report/json_output.h"

#include <cmath>
#include <string_view>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "common/json_escape.h"
#include "google/protobuf/util/json_util.h"

namespace bench::report {

std::string ToJson(const google::protobuf::Message& message) {
  google::protobuf::util::JsonPrintOptions options;
  options.preserve_proto_field_names = true;
  options.always_print_primitive_fields = true;
  std::string json;
  (void)google::protobuf::util::MessageToJsonString(message, &json, options);
  return json + "\n";
}

std::string JsonQuote(absl::string_view text) {
  return JsonString(std::string_view(text.data(), text.size()));
}

std::string JsonNumber(double value) {
  if (!std::isfinite(value)) return "null";
  return absl::StrFormat("%.10g", value);
}

std::string JsonDouble(double value) {
  if (std::isnan(value)) return "\"NaN\"";
  if (std::isinf(value)) return value > 0 ? "\"Infinity\"" : "\"-Infinity\"";
  return JsonNumber(value);
}

JsonObject& JsonObject::Add(absl::string_view key, absl::string_view text) {
  return AddRaw(key, JsonQuote(text));
}

JsonObject& JsonObject::Add(absl::string_view key, double value) {
  return AddRaw(key, JsonNumber(value));
}

JsonObject& JsonObject::Add(absl::string_view key, int64_t value) {
  return AddRaw(key, absl::StrCat(value));
}

JsonObject& JsonObject::Add(absl::string_view key, bool value) {
  return AddRaw(key, value ? "true" : "false");
}

JsonObject& JsonObject::AddRaw(absl::string_view key, absl::string_view json) {
  fields_.push_back(absl::StrCat(JsonQuote(key), ": ", json));
  return *this;
}

JsonObject& JsonObject::AddOptional(absl::string_view key, const std::optional<double>& value) {
  return AddRaw(key, value ? JsonNumber(*value) : "null");
}

std::string JsonObject::Build() const { return absl::StrCat("{", absl::StrJoin(fields_, ", "), "}"); }

}  // namespace bench::report
