#include "server/heap_policy.h"

#include <malloc.h>

#include <algorithm>
#include <thread>

#include "common/log.h"

namespace bench {

void ApplyControllerHeapPolicy() {
  // glibc gives up to 8 malloc arenas per core, and the web port's 48 workers spread a
  // request's allocations over many of them: the results grid of 100,000 jobs took
  // ~220 ms a call, page-faulting its memory anew, against ~70 ms with one arena per
  // core (docs/PERFORMANCE.md, "The web port over 100,000 jobs").
  const int arenas = static_cast<int>(std::max(2u, std::thread::hardware_concurrency()));
  if (mallopt(M_ARENA_MAX, arenas) != 1) Log("mallopt(M_ARENA_MAX, ", arenas, ") refused");
  // glibc raises its mmap threshold to the size of each mapped block freed (up to
  // 32 MiB), so after the first /metrics answer (14 MB at 8,192 GPUs) or commit batch,
  // blocks of that size come from the arenas and stay there once freed: under the fleet
  // load, ~240 MiB of benchd's RSS was freed heap, and the RSS rose with the bursts
  // (+8 % from minute 5 to 11). A fixed threshold keeps such blocks mapped and gives
  // them back: +2.6 % over the same minutes; over 30 minutes +12.7 % instead of +15.7 %,
  // at up to 3.5 % more CPU per stored row.
  if (mallopt(M_MMAP_THRESHOLD, static_cast<int>(kControllerMmapThreshold)) != 1) {
    Log("mallopt(M_MMAP_THRESHOLD, ", kControllerMmapThreshold, ") refused");
  }
}

}  // namespace bench
