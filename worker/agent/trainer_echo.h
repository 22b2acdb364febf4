// The echo of a trainer's output lines in the agent's stderr, beside the agent's own log
// lines (common/log.h) and, like them, never interleaved with another thread's line.
#pragma once

#include "absl/strings/string_view.h"

namespace bench::agent {

// Writes "<prefix><line>\n" to stderr as one write(2), e.g. prefix "[job-1 rank 0] ".
// Thread-safe.
void EchoLine(absl::string_view prefix, absl::string_view line);

}  // namespace bench::agent
