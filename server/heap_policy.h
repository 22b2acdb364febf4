// benchd's heap: jemalloc, configured in heap_policy.cc, whose background thread returns
// freed pages to the system within seconds, so that the RSS follows what is in use rather
// than the high-water mark of the load's bursts (docs/PERFORMANCE.md, "jemalloc, and
// ended jobs' diagnoses released"). Linked by benchd and web_api_bench, which stands in for
// it; never under the sanitizers (their allocator replaces malloc; the line then says so).
#pragma once

#include <string>

#include "absl/status/statusor.h"

namespace bench {

// How long a freed page stays with the allocator before its background thread gives it
// back to the system (jemalloc's dirty_decay_ms; muzzy pages are not kept).
inline constexpr int kControllerDirtyDecayMs = 10'000;

// The allocator in use, as a line for the startup log ("jemalloc 5.3.0-..., freed pages
// returned after 10 s by a background thread"). FailedPrecondition names what differs
// from the configuration above: malloc is not jemalloc's (the binary was linked without
// it), or the MALLOC_CONF environment variable changed one of its settings.
absl::StatusOr<std::string> ControllerHeapInUse();

}  // namespace bench
