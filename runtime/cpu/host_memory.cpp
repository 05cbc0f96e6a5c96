#include "runtime/cpu/host_memory.h"

#include <omp.h>
#include <sys/mman.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>

namespace scion::runtime::cpu {
namespace {

constexpr std::size_t kHugePage = std::size_t{2} << 20;
// Below this many bytes one thread zeroes faster than waking the team.
constexpr std::size_t kParallelZero = std::size_t{1} << 20;

std::size_t round_up(std::size_t n, std::size_t to) { return (n + to - 1) / to * to; }

// A mapping of `length` bytes (a multiple of kHugePage) starting on a kHugePage boundary:
// map one huge page more than asked and unmap the unaligned ends.
void* map_aligned(std::size_t length) {
  void* raw = mmap(nullptr, length + kHugePage, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (raw == MAP_FAILED) return nullptr;
  const auto start = reinterpret_cast<std::uintptr_t>(raw);
  const std::uintptr_t aligned = round_up(start, kHugePage);
  if (aligned > start) munmap(raw, aligned - start);
  const std::uintptr_t end = aligned + length, raw_end = start + length + kHugePage;
  if (raw_end > end) munmap(reinterpret_cast<void*>(end), raw_end - end);
  void* block = reinterpret_cast<void*>(aligned);
  madvise(block, length, MADV_HUGEPAGE);  // advice only: refused, the block keeps 4 KiB pages
  return block;
}

}  // namespace

HostMemory::~HostMemory() {
  for (const auto& [data, length] : mapped_) munmap(data, length);
}

void* HostMemory::allocate(std::size_t bytes, bool zeroed) {
  if (bytes > std::numeric_limits<std::size_t>::max() - 2 * kHugePage) return nullptr;
  if (bytes >= kMappedBlock) {
    const std::size_t length = round_up(bytes, kHugePage);
    void* block = map_aligned(length);
    if (block) mapped_[block] = length;
    return block;  // a fresh mapping reads as zero
  }
  void* data = std::aligned_alloc(64, round_up(bytes == 0 ? 1 : bytes, 64));
  if (data && zeroed) std::memset(data, 0, bytes);
  return data;
}

void HostMemory::deallocate(void* data) {
  if (auto it = mapped_.find(data); it != mapped_.end()) {
    munmap(it->first, it->second);
    mapped_.erase(it);
    return;
  }
  std::free(data);
}

void fill_zero(void* data, std::size_t bytes) {
  if (bytes < kParallelZero) {
    std::memset(data, 0, bytes);
    return;
  }
#pragma omp parallel
  {
    const std::size_t t = static_cast<std::size_t>(omp_get_thread_num());
    const std::size_t threads = static_cast<std::size_t>(omp_get_num_threads());
    const std::size_t begin = bytes * t / threads, end = bytes * (t + 1) / threads;
    std::memset(static_cast<char*>(data) + begin, 0, end - begin);
  }
}

}  // namespace scion::runtime::cpu
