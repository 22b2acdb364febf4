// benchd's allocator as benchd links it (bench_controller_heap: jemalloc and its settings).
// Not built under the sanitizers, whose allocator replaces malloc.
#include "server/heap_policy.h"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

namespace bench {
namespace {

// This process's resident bytes (/proc/self/statm's second field is in pages).
size_t ResidentBytes() {
  FILE* statm = std::fopen("/proc/self/statm", "r");
  if (statm == nullptr) return 0;
  unsigned long size = 0, resident = 0;
  const int read = std::fscanf(statm, "%lu %lu", &size, &resident);
  std::fclose(statm);
  return read == 2 ? resident * static_cast<size_t>(sysconf(_SC_PAGESIZE)) : 0;
}

TEST(HeapPolicyTest, BenchdsMallocIsJemallocWithABackgroundPurge) {
  absl::StatusOr<std::string> heap = ControllerHeapInUse();
  ASSERT_TRUE(heap.ok()) << heap.status();
  EXPECT_EQ(heap->rfind("jemalloc 5.", 0), 0u) << *heap;
  EXPECT_NE(heap->find("returned after 10 s"), std::string::npos) << *heap;
}

// What glibc's malloc did not do under the fleet load: small blocks freed after a burst
// (as batches and answers are) go back to the system with no further call into malloc,
// by jemalloc's background thread once they have decayed.
TEST(HeapPolicyTest, SmallBlocksFreedAfterABurstGoBackToTheSystem) {
  ASSERT_TRUE(ControllerHeapInUse().ok());
  constexpr size_t kBlock = 4096, kBlocks = 64 * 1024;  // 256 MiB
  constexpr size_t kReturned = 192u << 20;
  std::vector<void*> blocks(kBlocks);
  for (void*& block : blocks) {
    block = std::malloc(kBlock);
    ASSERT_NE(block, nullptr);
    std::memset(block, 1, kBlock);
  }
  const size_t burst = ResidentBytes();
  ASSERT_GT(burst, kBlock * kBlocks);
  for (void* block : blocks) std::free(block);

  // The decay takes kControllerDirtyDecayMs; six times that is the bound of a loaded
  // machine, not of the allocator.
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(6 * kControllerDirtyDecayMs);
  size_t resident = ResidentBytes();
  while (resident + kReturned > burst && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    resident = ResidentBytes();
  }
  EXPECT_LE(resident + kReturned, burst)
      << "resident " << (resident >> 20) << " MiB, " << (burst >> 20)
      << " MiB before the blocks were freed: the freed pages stayed";
}

}  // namespace
}  // namespace bench
