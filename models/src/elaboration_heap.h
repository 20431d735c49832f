#pragma once
// The heap of a pod's elaboration, faulted in at once instead of a page at a time.
//
// Building a pod allocates tens of KiB per chip (its blocks, their TLM sockets and ports, SystemC's names and
// registries: models/README.md, "What elaboration costs"), all fresh memory. On the project's machines (virtual
// machines where a page fault traps to the hypervisor) the first touch of each 4 KiB page costs some 15 us,
// while the kernel maps the same pages in one madvise(MADV_POPULATE_WRITE) call at well under 1 us each: the
// page faults were most of a v5p pod's elaboration time (bench/README.md). So the pod measures what its
// second chip allocated, reserves that much for each chip still to build, and has the kernel map it at once.
// Where the platform cannot (not Linux with glibc, or a kernel before 5.14) nothing happens and the pages
// fault as usual; the simulation never depends on it.
#include <cstddef>

namespace tpusim::models {

// Bytes of heap in use (malloc's own count: allocated chunks with their headers); 0 where unknown.
[[nodiscard]] std::size_t heap_in_use();

// Grows the heap by about `bytes` of free, already mapped memory that the following allocations use, and keeps
// it (a free() does not hand it back to the system). Returns the bytes mapped (0: nothing done: a request
// under 8 MiB, or a platform without the means).
std::size_t prefault_heap(std::size_t bytes);

}  // namespace tpusim::models
