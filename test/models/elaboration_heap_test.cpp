// The heap a pod maps at once before building its chips (models/src/elaboration_heap.h). The figures are the
// process's own page faults: building objects in a mapped heap takes (almost) none.
#include "elaboration_heap.h"

#include <sys/resource.h>

#include <cstdlib>
#include <vector>

#include <gtest/gtest.h>

namespace tpusim::models {
namespace {

long minor_faults() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_minflt;
}

constexpr std::size_t kMiB = std::size_t{1} << 20;

// 16 MiB as 16,384 blocks of 1 KiB, as a pod's objects come: small, fresh, kept.
std::vector<void*> small_blocks() {
  std::vector<void*> blocks;
  blocks.reserve(16 * 1024);
  for (int i = 0; i < 16 * 1024; ++i) {
    auto* p = static_cast<char*>(std::malloc(1024));
    p[0] = p[1023] = 1;  // touch both ends, as a constructor would
    blocks.push_back(p);
  }
  return blocks;
}

bool platform_maps_heap() {
#if defined(__linux__) && defined(__GLIBC__) && !defined(__SANITIZE_ADDRESS__)
  return true;
#else
  return false;
#endif
}

TEST(ElaborationHeap, CountsTheHeapInUse) {
  if (!platform_maps_heap()) GTEST_SKIP() << "not glibc's malloc";
  const std::size_t before = heap_in_use();
  const std::vector<void*> blocks = small_blocks();
  const std::size_t grown = heap_in_use() - before;
  // 16,384 chunks of 1 KiB plus malloc's 8-byte header, rounded to 16 bytes: 1,040 bytes each.
  EXPECT_GE(grown, 16 * 1024 * std::size_t{1040});
  EXPECT_LT(grown, 16 * 1024 * std::size_t{1040} + kMiB);
}

TEST(ElaborationHeap, SmallRequestsAreLeftToThePageFaults) {
  EXPECT_EQ(prefault_heap(8 * kMiB - 1), 0u);
}

TEST(ElaborationHeap, MappedHeapTakesTheFollowingAllocationsWithoutFaults) {
  if (!platform_maps_heap()) GTEST_SKIP() << "not glibc's malloc";
  const std::size_t mapped = prefault_heap(24 * kMiB);
  if (mapped == 0) GTEST_SKIP() << "kernel without MADV_POPULATE_WRITE (before 5.14)";
  // Two 16 MiB blocks (8 MiB in the second), less the partial pages at their ends.
  EXPECT_GE(mapped, 24 * kMiB - 4 * 4096);
  EXPECT_LE(mapped, 24 * kMiB);
  const long faults = minor_faults();
  const std::vector<void*> blocks = small_blocks();
  // Unmapped, 16 MiB of fresh heap would fault 4,096 pages of 4 KiB.
  EXPECT_LT(minor_faults() - faults, 256);
}

}  // namespace
}  // namespace tpusim::models
