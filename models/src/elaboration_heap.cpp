#include "elaboration_heap.h"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <vector>

#if defined(__linux__) && defined(__GLIBC__)
#include <malloc.h>
#include <sys/mman.h>
#include <unistd.h>
#endif

namespace tpusim::models {

#if defined(__linux__) && defined(__GLIBC__) && defined(MADV_POPULATE_WRITE)

std::size_t heap_in_use() { return mallinfo2().uordblks; }

std::size_t prefault_heap(std::size_t bytes) {
  constexpr std::size_t kMinimum = std::size_t{8} << 20;  // below this the faults cost a few ms at most
  constexpr std::size_t kMaximum = std::size_t{1} << 30;  // mallopt takes an int
  // glibc serves requests from its heap (not a mapping of their own) up to M_MMAP_THRESHOLD, at most 32 MiB.
  constexpr std::size_t kBlock = std::size_t{16} << 20;
  constexpr int kDefaultMmapThreshold = 128 * 1024;  // glibc's default
  if (bytes < kMinimum) return 0;
  bytes = std::min(bytes, kMaximum);
  // Freed memory at the top of the heap stays in it (the pod keeps what it builds until the process ends).
  if (mallopt(M_TRIM_THRESHOLD, std::numeric_limits<int>::max()) == 0) return 0;
  mallopt(M_MMAP_THRESHOLD, static_cast<int>(2 * kBlock));
  const auto page = static_cast<std::uintptr_t>(sysconf(_SC_PAGESIZE));
  std::vector<void*> blocks;
  blocks.reserve(bytes / kBlock + 1);
  std::size_t mapped = 0;
  for (std::size_t left = bytes; left > 0;) {
    const std::size_t n = std::min(left, kBlock);
    void* p = std::malloc(n);
    if (p == nullptr) break;
    blocks.push_back(p);
    left -= n;
    const std::uintptr_t begin = (reinterpret_cast<std::uintptr_t>(p) + page - 1) & ~(page - 1);
    const std::uintptr_t end = (reinterpret_cast<std::uintptr_t>(p) + n) & ~(page - 1);
    if (end <= begin) continue;
    // Huge pages where the kernel has them (transparent_hugepage "madvise" or "always"): far fewer TLB misses
    // while the blocks are built and simulated. Advice only: without them the pages are 4 KiB.
    (void)madvise(reinterpret_cast<void*>(begin), end - begin, MADV_HUGEPAGE);
    if (madvise(reinterpret_cast<void*>(begin), end - begin, MADV_POPULATE_WRITE) != 0) break;  // kernel < 5.14
    mapped += end - begin;
  }
  // Newest first: each merges with the top of the heap, which the next allocations are carved from.
  for (auto it = blocks.rbegin(); it != blocks.rend(); ++it) std::free(*it);
  mallopt(M_MMAP_THRESHOLD, kDefaultMmapThreshold);
  return mapped;
}

#else

std::size_t heap_in_use() { return 0; }
std::size_t prefault_heap(std::size_t /*bytes*/) { return 0; }

#endif

}  // namespace tpusim::models
