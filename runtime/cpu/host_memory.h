// The CPU backend's memory.
//
// Blocks of kMappedBlock bytes or more are mapped straight from the kernel, 2 MiB aligned
// and marked for transparent huge pages (madvise(MADV_HUGEPAGE): Linux's default THP mode
// on Debian is "madvise", so without asking a process gets 4 KiB pages). Such a block is
// zero when mapped, so allocate(bytes, zeroed = true) writes nothing, and the first touch
// of each 2 MiB faults once instead of 512 times: a W3 training's 2.8 GiB of arenas take
// about 1,400 page faults instead of 700,000, and its products and optimizer miss the TLB
// less. Where the kernel has no huge page to give, the block simply has 4 KiB pages.
// Smaller blocks come from aligned_alloc, 64-byte aligned. Not thread-safe (as the
// backend that owns it).
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
