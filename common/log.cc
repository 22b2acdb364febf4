#include "common/log.h"

#include <unistd.h>

#include <string>

#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace bench {
namespace {
std::string& Component() {
  static std::string* component = new std::string("bench");
  return *component;
}
}  // namespace

void SetLogComponent(absl::string_view component) { Component() = std::string(component); }

void LogLine(absl::string_view message) {
  std::string line = absl::StrCat(
      absl::FormatTime("%Y-%m-%dT%H:%M:%E3SZ", absl::Now(), absl::UTCTimeZone()), " ",
      Component(), ": ", message, "\n");
  (void)!write(STDERR_FILENO, line.data(), line.size());
}

}  // namespace bench
