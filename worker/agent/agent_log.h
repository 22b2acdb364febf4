// The agent's log: whole lines on stderr, never interleaved between threads.
#pragma once

#include "absl/strings/string_view.h"

namespace bench::agent {

// Writes "<UTC time> bench-agent: <message>\n" to stderr. Thread-safe.
void AgentLog(absl::string_view message);

// Writes "<prefix><line>\n" to stderr as one write (used to echo a trainer's output,
// e.g. prefix "[job-1 rank 0] "). Thread-safe.
void EchoLine(absl::string_view prefix, absl::string_view line);

}  // namespace bench::agent
