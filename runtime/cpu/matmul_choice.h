// Which library runs each class of fp32 product on this machine: oneDNN or OpenBLAS.
//
// Why a choice at all: Debian's OpenBLAS (DYNAMIC_ARCH) picks its kernels by CPU model,
// and on a CPU it does not know it runs its generic `Prescott` (SSE3) kernels, 2.5-8x
// slower than the CPU multiplies with oneDNN's (bench/README.md, "No BLAS cliff"). Where
// OpenBLAS has wide kernels for the CPU, the two libraries are close, and each leads on
// some shapes.
//
// The rule, in order:
//   1. OpenBLAS may run a class only when its core's kernels use AVX2 or wider
//      (openblas_core_is_wide: Haswell, Zen, SkylakeX, Cooperlake, SapphireRapids), or
//      when the CPU has no AVX2 at all (then no library has wide kernels). So on a CPU
//      with AVX2 or AVX-512 a generic OpenBLAS kernel is never chosen.
//   2. Where both qualify, each class's representative products are timed once per
//      machine on one thread, in thread CPU time (so a loaded machine measures what a
//      quiet one does, only slower to finish), oneDNN and OpenBLAS interleaved, median of
//      3; OpenBLAS keeps a class only when it is at least 10% faster. oneDNN is the
//      default because it also picks its kernels at run time, by ISA, not by CPU model.
//   3. The measured choice is cached in a file ($XDG_CACHE_HOME or ~/.cache, then
//      scion/fp32-matmul-choice.txt) under a key of everything it depends on (CPU model
//      and ISA flags, OpenBLAS's core and build, oneDNN's version and ISA), so every later
//      process on the machine reads it instead of measuring. Where no cache can be
//      written, every process measures (and says so).
//
// Deterministic: a product's class depends only on its shape and call site, never on the
// thread count, and one process uses one choice, so runs stay reproducible bit for bit
// and 1 thread against 2 compares the same kernels.
//
// Thread-safe: fp32_matmul_choice() is computed once (a function-local static).
#pragma once

#include <array>
#include <cstdint>
#include <string>

#include "runtime/backend.h"

namespace scion::runtime::cpu {

// The classes of fp32 products scion runs.
enum class ProductClass {
  kLinear,     // linear layers: every dimension at least kThinDimension
  kThin,       // a dimension below kThinDimension: LoRA ranks, heads, a few rows
  kAttention,  // one (sequence, head) product of attention, on one thread of the team
};
inline constexpr int kProductClasses = 3;
inline constexpr std::int64_t kThinDimension = 32;
const char* product_class_name(ProductClass product_class);
const char* matmul_library_name(MatmulLibrary library);

// The class of a (M, N, K) product outside attention.
inline ProductClass classify_product(std::int64_t M, std::int64_t N, std::int64_t K) {
  return M < kThinDimension || N < kThinDimension || K < kThinDimension ? ProductClass::kThin
                                                                        : ProductClass::kLinear;
}

struct ClassChoice {
  MatmulLibrary library = MatmulLibrary::kOnednn;
  // Measured rates (GFLOP/s on one thread); 0 when not measured (rule 1 decided).
  double onednn_gflops = 0, openblas_gflops = 0;
};

struct MatmulChoice {
  std::string openblas_core;    // openblas_get_corename(): "Cooperlake", "Prescott", ...
  std::string openblas_config;  // openblas_get_config(): version and build options
  bool openblas_wide = false;   // its kernels use AVX2 or wider (rule 1)
  bool cpu_has_avx2 = false;
  // How the choice was made, in words: "rule: ...", "measured ...", "cached in ...".
  std::string how;
  std::string cache_path;  // empty where no cache directory could be found
  std::array<ClassChoice, kProductClasses> classes;

  MatmulLibrary library(ProductClass product_class) const {
    return classes[static_cast<int>(product_class)].library;
  }
};

// The choice of this process (measured or read on the first call).
const MatmulChoice& fp32_matmul_choice();

// c (M, N; ldc) = alpha · op(a) · op(b) + beta · c (a GemmFn, gemm.h) on the library this
// machine's choice gives the product's class (classify_product). Called from outside
// parallel regions, as cpu::gemm.
void gemm_chosen(bool trans_a, bool trans_b, std::int64_t M, std::int64_t N, std::int64_t K,
                 float alpha, const float* a, std::int64_t lda, const float* b, std::int64_t ldb,
                 float beta, float* c, std::int64_t ldc);

// Whether OpenBLAS's kernels for `core` (its core name) use AVX2 or wider.
bool openblas_core_is_wide(const std::string& core);

}  // namespace scion::runtime::cpu
