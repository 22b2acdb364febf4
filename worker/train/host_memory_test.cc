#include "worker/train/host_memory.h"

#include <sys/resource.h>

#include <cstdlib>
#include <cstring>

#include <gtest/gtest.h>

namespace bench_train {
namespace {

long MinorFaults() {
  struct rusage usage;
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_minflt;
}

// Allocates `bytes`, writes every page, frees it; returns the minor page faults
// that took. The pointer escapes so that the compiler keeps all three calls.
long FaultsToTouch(size_t bytes) {
  const long before = MinorFaults();
  char* block = static_cast<char*>(std::malloc(bytes));
  asm volatile("" : : "g"(block) : "memory");
  std::memset(block, 1, bytes);
  asm volatile("" : : "g"(block) : "memory");
  std::free(block);
  return MinorFaults() - before;
}

TEST(HostMemoryTest, FreedLargeBlocksAreReusedWithoutFaultingAgain) {
  if (kMallocIsAddressSanitizers) GTEST_SKIP() << "malloc is AddressSanitizer's, not glibc's";
  constexpr size_t kBytes = 64 << 20;  // twice glibc's largest mmap threshold
  constexpr long kPages = kBytes / 4096;
  // glibc's default: the block is mapped and unmapped, so each use faults it in.
  ASSERT_GT(FaultsToTouch(kBytes), kPages / 2);
  ASSERT_GT(FaultsToTouch(kBytes), kPages / 2);

  ASSERT_TRUE(KeepFreedHostMemory().ok());
  FaultsToTouch(kBytes);  // the heap grows once
  EXPECT_LT(FaultsToTouch(kBytes), kPages / 100);
  EXPECT_LT(FaultsToTouch(kBytes), kPages / 100);
}

}  // namespace
}  // namespace bench_train
