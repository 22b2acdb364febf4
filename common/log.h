// Human logs on stderr, one format for every binary (benchd, bench-agent, benchctl's
// diagnostics, bench-train): "2026-11-21T18:51:15.123Z benchd: message". Thread-safe
// (one write per line).
//
// Standard library only (no Abseil): bench-train, which builds against libtorch alone,
// links it too, as the tiny `bench_log` library (the top-level CMakeLists.txt).
#pragma once

#include <sstream>
#include <string>
#include <string_view>

namespace bench {

// e.g. "benchd", "bench-train rank 3"; default "bench". Call it before other threads log.
void SetLogComponent(std::string_view component);
void LogLine(std::string_view message);

// Log("agent ", name, " lost: ", why): the pieces as an std::ostream writes them
// (integers in decimal, doubles with 6 significant digits, as absl::StrCat did).
template <typename... Args>
void Log(const Args&... args) {
  std::ostringstream line;
  (line << ... << args);
  LogLine(line.str());
}

}  // namespace bench
