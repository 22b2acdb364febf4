// benchd's settings for glibc's malloc, applied first thing in main (docs/PERFORMANCE.md,
// "The fleet at scale": what each one was measured to do).
#pragma once

#include <cstddef>

namespace bench {

// An allocation at least this big gets its own mapping, returned to the system when it
// is freed, whatever was allocated and freed before.
inline constexpr size_t kControllerMmapThreshold = 128 * 1024;

// One malloc arena per core (at least 2) and the fixed mmap threshold above. Call it
// before the process starts threads; each setting that glibc refuses is logged, not
// fatal (the defaults then stay).
void ApplyControllerHeapPolicy();

}  // namespace bench
