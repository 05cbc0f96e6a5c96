#include "runtime/cpu/host_memory.h"

#include <omp.h>
#include <sys/mman.h>

#include <cstdlib>
#include <cstring>
#include <limits>

namespace scion::runtime::cpu {
namespace {

constexpr std::size_t kPage = 4096;
// Below this many bytes one thread zeroes faster than waking the team.
constexpr std::size_t kParallelZero = std::size_t{1} << 20;

std::size_t round_up(std::size_t n, std::size_t to) { return (n + to - 1) / to * to; }

}  // namespace

HostMemory::~HostMemory() {
  for (const auto& [data, length] : mapped_) munmap(data, length);
}

void* HostMemory::allocate(std::size_t bytes, bool zeroed) {
  if (bytes > std::numeric_limits<std::size_t>::max() - kPage) return nullptr;
  if (bytes >= kMappedBlock) {
    const std::size_t length = round_up(bytes, kPage);
    void* block = mmap(nullptr, length, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (block == MAP_FAILED) return nullptr;
    mapped_[block] = length;
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
