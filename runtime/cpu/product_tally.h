// How many products each library ran in this process and how many FLOPs they did: the
// training profile (runtime/op_profile.h) prints them, and tests check with them which
// library the products really went to (tests/unit/runtime_matmul_choice_test.cpp).
//
// Counted where each library is called (gemm_serial for every OpenBLAS product, the
// oneDNN products in onednn_gemm.cpp), so no product escapes. Thread-safe (relaxed
// atomic counters: a few per product, nothing against a product's cost).
#pragma once

#include <cstdint>

namespace scion::runtime::cpu {

enum class ProductLibrary { kOpenBlasF32, kOnednnF32, kOnednnBf16 };
inline constexpr int kProductLibraries = 3;
const char* product_library_name(ProductLibrary library);  // "openblas fp32", ...

struct ProductTally {
  std::int64_t calls = 0;
  double flops = 0;  // 2 per multiply-add
};

void tally_product(ProductLibrary library, std::int64_t M, std::int64_t N, std::int64_t K);
ProductTally product_tally(ProductLibrary library);

}  // namespace scion::runtime::cpu
