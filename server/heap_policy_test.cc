// ApplyControllerHeapPolicy against glibc's malloc itself (mallinfo2's hblks counts the
// blocks that have their own mapping). Not built under the sanitizers, whose allocator
// replaces glibc's.
#include "server/heap_policy.h"

#include <malloc.h>

#include <cstdlib>
#include <cstring>

#include <gtest/gtest.h>

namespace bench {
namespace {

// Written through, so that the compiler keeps each malloc and free.
void* volatile escaped = nullptr;

void* Touched(size_t bytes) {
  void* block = std::malloc(bytes);
  std::memset(block, 1, bytes);
  escaped = block;
  return block;
}

TEST(HeapPolicyTest, ABigBlockFreedDoesNotPullLaterBlocksIntoTheHeap) {
  ApplyControllerHeapPolicy();
  // glibc's default would now raise its threshold to 8 MiB, and the next 512 KiB would
  // come from (and, freed, stay in) an arena.
  std::free(Touched(8 << 20));
  const size_t mapped = mallinfo2().hblks;
  void* block = Touched(4 * kControllerMmapThreshold);
  EXPECT_EQ(mallinfo2().hblks, mapped + 1) << "512 KiB was not given its own mapping";
  std::free(block);
  EXPECT_EQ(mallinfo2().hblks, mapped) << "its mapping was not returned when freed";
}

}  // namespace
}  // namespace bench
