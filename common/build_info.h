// What every binary (benchd, bench-agent, bench-train, benchctl) prints for --version:
// "<binary> <project version> (build <id>)". The version is CMake's PROJECT_VERSION; the
// build id is the git commit the binary was built from (12 hex digits), with "-dirty" when
// tracked files had changes, or "unknown" when built outside a git checkout (or what
// -DBENCH_BUILD_ID= says). Both are compiled into one tiny generated file that is
// rewritten at build time only when they change (cmake/BuildInfo.cmake), so a new commit
// recompiles that file alone and relinks the binaries.
//
// Standard library only: built into bench-train (the `bench_build_info` library).
#pragma once

#include <string>
#include <string_view>

namespace bench {

const char* ProjectVersion();  // e.g. "0.1.0"
const char* BuildId();         // e.g. "ad308ec1f2b4-dirty", or "unknown"

// The one --version line, without a newline: VersionLine("benchd") is
// "benchd 0.1.0 (build ad308ec1f2b4)".
std::string VersionLine(std::string_view binary);

}  // namespace bench
