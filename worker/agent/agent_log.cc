#include "worker/agent/agent_log.h"

#include <cstdio>
#include <string>

#include "absl/base/const_init.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace bench::agent {
namespace {

ABSL_CONST_INIT absl::Mutex log_mu(absl::kConstInit);

void WriteLine(const std::string& line) {
  absl::MutexLock lock(&log_mu);
  std::fwrite(line.data(), 1, line.size(), stderr);
  std::fflush(stderr);
}

}  // namespace

void AgentLog(absl::string_view message) {
  WriteLine(absl::StrCat(absl::FormatTime("%Y-%m-%dT%H:%M:%E3SZ", absl::Now(),
                                          absl::UTCTimeZone()),
                         " bench-agent: ", message, "\n"));
}

void EchoLine(absl::string_view prefix, absl::string_view line) {
  WriteLine(absl::StrCat(prefix, line, "\n"));
}

}  // namespace bench::agent
