// Human logs on stderr: "2026-11-21T18:51:15.123Z benchd: message". Thread-safe (one
// write per line).
#pragma once

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace bench {

void SetLogComponent(absl::string_view component);  // e.g. "benchd"; default "bench"
void LogLine(absl::string_view message);

template <typename... Args>
void Log(const Args&... args) {
  LogLine(absl::StrCat(args...));
}

}  // namespace bench
