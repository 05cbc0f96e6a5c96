#include "runtime/cpu/product_tally.h"

#include <atomic>

namespace scion::runtime::cpu {
namespace {

struct Counters {
  std::atomic<std::int64_t> calls{0};
  std::atomic<std::int64_t> multiply_adds{0};
};
Counters counters[kProductLibraries];

}  // namespace

const char* product_library_name(ProductLibrary library) {
  switch (library) {
    case ProductLibrary::kOpenBlasF32:
      return "openblas fp32";
    case ProductLibrary::kOnednnF32:
      return "onednn fp32";
    case ProductLibrary::kOnednnBf16:
      return "onednn bf16";
  }
  return "?";
}

void tally_product(ProductLibrary library, std::int64_t M, std::int64_t N, std::int64_t K) {
  Counters& c = counters[static_cast<int>(library)];
  c.calls.fetch_add(1, std::memory_order_relaxed);
  c.multiply_adds.fetch_add(M * N * K, std::memory_order_relaxed);
}

ProductTally product_tally(ProductLibrary library) {
  const Counters& c = counters[static_cast<int>(library)];
  return {c.calls.load(std::memory_order_relaxed),
          2.0 * static_cast<double>(c.multiply_adds.load(std::memory_order_relaxed))};
}

}  // namespace scion::runtime::cpu
