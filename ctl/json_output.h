// benchctl's JSON output: protobuf's JSON mapping with the proto field names
// (snake_case) and every field printed, defaults included, so scripts see a stable shape.
// int64 fields are JSON strings, enums their names, as the mapping defines.
#pragma once

#include <string>
#include <vector>

#include "google/protobuf/message.h"

namespace bench::ctl {

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

}  // namespace bench::ctl
