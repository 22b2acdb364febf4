#include "server/heap_policy.h"

#include <sys/types.h>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

#ifdef BENCH_CONTROLLER_JEMALLOC
#include <jemalloc/jemalloc.h>

// Read by jemalloc when it starts (before main), so it holds for every allocation. Under
// the 30-minute fleet load (docs/PERFORMANCE.md, "jemalloc, and ended jobs' diagnoses
// released") glibc's malloc kept the freed heap of each burst (batches in flight to the
// writer, answers being built): benchd's RSS rose 12.6 % from minute 5 to 30, at 13.3 us
// of CPU per stored row. With these settings (and ended jobs' diagnoses released) it
// stayed flat (+2.8 %) at 9.7 us a row, and the web API's grid, jobs and variability
// reads over 100,000 jobs ran 2.5 to 5 times faster.
// The dirty decay must equal kControllerDirtyDecayMs (the test reads it back).
const char* malloc_conf = "background_thread:true,dirty_decay_ms:10000,muzzy_decay_ms:0";
#endif

namespace bench {

#ifdef BENCH_CONTROLLER_JEMALLOC
namespace {

template <typename T>
absl::StatusOr<T> ReadSetting(const char* name) {
  T value{};
  size_t size = sizeof(value);
  if (mallctl(name, &value, &size, nullptr, 0) != 0) {
    return absl::InternalError(absl::StrCat("jemalloc has no setting \"", name, "\""));
  }
  return value;
}

}  // namespace

absl::StatusOr<std::string> ControllerHeapInUse() {
  absl::StatusOr<const char*> version = ReadSetting<const char*>("version");
  absl::StatusOr<bool> background = ReadSetting<bool>("background_thread");
  absl::StatusOr<ssize_t> dirty = ReadSetting<ssize_t>("opt.dirty_decay_ms");
  absl::StatusOr<ssize_t> muzzy = ReadSetting<ssize_t>("opt.muzzy_decay_ms");
  for (const absl::Status& status :
       {version.status(), background.status(), dirty.status(), muzzy.status()}) {
    if (!status.ok()) return status;
  }
  if (!*background || *dirty != kControllerDirtyDecayMs || *muzzy != 0) {
    return absl::FailedPreconditionError(absl::StrCat(
        "MALLOC_CONF changed benchd's jemalloc settings: background_thread ",
        *background ? "true" : "false", ", dirty_decay_ms ", *dirty, ", muzzy_decay_ms ", *muzzy,
        " (benchd's: true, ", kControllerDirtyDecayMs,
        ", 0); freed memory may stay with the process"));
  }
  return absl::StrCat("jemalloc ", *version, ", freed pages returned after ",
                      kControllerDirtyDecayMs / 1000, " s by a background thread");
}
#else
absl::StatusOr<std::string> ControllerHeapInUse() {
  return absl::FailedPreconditionError(
      "malloc is not jemalloc's: this benchd was built without it (a sanitizer build), so "
      "freed memory may stay with the process");
}
#endif

}  // namespace bench
