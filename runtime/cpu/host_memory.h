// The CPU backend's memory.
//
// Blocks of kMappedBlock bytes or more are mapped straight from the kernel. Such a block is
// zero when mapped, so allocate(bytes, zeroed = true) writes nothing: an arena is not
// zeroed by a memset on one thread and then written again, and its pages fault in where
// the kernels first write them, on every thread of the team. (Transparent huge pages,
// madvise(MADV_HUGEPAGE), were measured and left out: with Debian's defrag setting a
// fault on such a block compacts memory first, and W3's set-up and first step took 30%
// more CPU time (21.4 s against 16.0 s) for a few percent on later steps; bench/README.md,
// "Time to the first step".) Smaller blocks come from aligned_alloc, 64-byte aligned. Not
// thread-safe (as the backend that owns it).
#pragma once

#include <cstddef>
#include <map>

namespace scion::runtime::cpu {

class HostMemory {
 public:
  static constexpr std::size_t kMappedBlock = std::size_t{4} << 20;

  HostMemory() = default;
  HostMemory(const HostMemory&) = delete;
  HostMemory& operator=(const HostMemory&) = delete;
  ~HostMemory();

  // nullptr when the memory cannot be had. `zeroed`: every byte 0.
  void* allocate(std::size_t bytes, bool zeroed);
  // REQUIRES: data from allocate() of this object, or null.
  void deallocate(void* data);

 private:
  std::map<void*, std::size_t> mapped_;  // mapped blocks and their lengths
};

// memset(data, 0, bytes), split over the OpenMP team when large.
void fill_zero(void* data, std::size_t bytes);

}  // namespace scion::runtime::cpu
