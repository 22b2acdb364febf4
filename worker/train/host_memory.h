// The host heap policy of a training process on the CPU.
//
// A training step frees and allocates the same activation buffers again every
// step (gigabytes for ResNet-50 at 224 px). With glibc's defaults, blocks over
// the mmap threshold (at most 32 MiB) are mapped and unmapped every time and a
// freed heap top is given back to the kernel, so each step faults its
// activations in afresh: page faults and kernel page clearing took about a
// third of a CPU step (docs/PERFORMANCE.md). KeepFreedHostMemory makes malloc
// keep freed memory for reuse instead, as the CUDA caching allocator does on a
// GPU and as preloading jemalloc or tcmalloc does for PyTorch on CPUs. The
// process's resident size then stays at its peak.
//
// Torch-free; process-wide; call it before training allocates.
#ifndef BENCHFLEET_WORKER_TRAIN_HOST_MEMORY_H_
#define BENCHFLEET_WORKER_TRAIN_HOST_MEMORY_H_

#include "worker/train/status.h"

namespace bench_train {

// True in a build with AddressSanitizer (-DBENCH_SANITIZE=ON, tests/sanitize.sh): malloc
// is then the sanitizer's, which has no such knobs (its mallopt fails) and holds freed
// blocks in its own quarantine.
#if defined(__SANITIZE_ADDRESS__)
inline constexpr bool kMallocIsAddressSanitizers = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
inline constexpr bool kMallocIsAddressSanitizers = true;
#else
inline constexpr bool kMallocIsAddressSanitizers = false;
#endif
#else
inline constexpr bool kMallocIsAddressSanitizers = false;
#endif

// No mmap for large blocks, no trimming of the heap top (glibc's mallopt
// M_MMAP_MAX = 0, M_TRIM_THRESHOLD = -1). Unimplemented without glibc. Under
// AddressSanitizer it leaves the sanitizer's malloc alone and succeeds, so that a
// sanitized bench-train trains on the CPU as the real one does.
Status KeepFreedHostMemory();

}  // namespace bench_train

#endif  // BENCHFLEET_WORKER_TRAIN_HOST_MEMORY_H_
