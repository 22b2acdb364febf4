#include "worker/train/host_memory.h"

#ifdef __GLIBC__
#include <malloc.h>
#endif

namespace bench_train {

Status KeepFreedHostMemory() {
  if (kMallocIsAddressSanitizers) return Status::Ok();
#ifdef __GLIBC__
  // mallopt returns 1 on success. -1 disables trimming (mallopt(3)).
  if (mallopt(M_MMAP_MAX, 0) != 1) return InternalError("mallopt(M_MMAP_MAX, 0) failed");
  if (mallopt(M_TRIM_THRESHOLD, -1) != 1) {
    return InternalError("mallopt(M_TRIM_THRESHOLD, -1) failed");
  }
  return Status::Ok();
#else
  return UnimplementedError("keeping freed host memory needs glibc's malloc");
#endif
}

}  // namespace bench_train
