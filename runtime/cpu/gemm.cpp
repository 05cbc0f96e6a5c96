#include "runtime/cpu/gemm.h"

#include <cblas.h>
#include <omp.h>

#include <algorithm>

#include "runtime/cpu/product_tally.h"

namespace scion::runtime::cpu {
namespace {
// Below this many multiply-adds a product is not worth waking a second thread for.
constexpr double kParallelWork = 1 << 18;
// Keep blocks a multiple of the kernels' register tile so no thread gets a ragged edge.
constexpr std::int64_t kTile = 16;
}  // namespace

void gemm_serial(bool trans_a, bool trans_b, std::int64_t M, std::int64_t N, std::int64_t K,
                 float alpha, const float* a, std::int64_t lda, const float* b, std::int64_t ldb,
                 float beta, float* c, std::int64_t ldc) {
  if (M == 0 || N == 0) return;
  tally_product(ProductLibrary::kOpenBlasF32, M, N, K);
  cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans,
              trans_b ? CblasTrans : CblasNoTrans, static_cast<blasint>(M), static_cast<blasint>(N),
              static_cast<blasint>(K), alpha, a, static_cast<blasint>(lda), b,
              static_cast<blasint>(ldb), beta, c, static_cast<blasint>(ldc));
}

void gemm(bool trans_a, bool trans_b, std::int64_t M, std::int64_t N, std::int64_t K, float alpha,
          const float* a, std::int64_t lda, const float* b, std::int64_t ldb, float beta, float* c,
          std::int64_t ldc) {
  const int threads = omp_in_parallel() ? 1 : omp_get_max_threads();
  const double work = static_cast<double>(M) * static_cast<double>(N) * static_cast<double>(K);
  const bool by_rows = M >= N || M >= threads * 4 * kTile;
  const std::int64_t extent = by_rows ? M : N;
  if (threads <= 1 || work < kParallelWork || extent < 2 * kTile) {
    gemm_serial(trans_a, trans_b, M, N, K, alpha, a, lda, b, ldb, beta, c, ldc);
    return;
  }
  const std::int64_t tiles = (extent + kTile - 1) / kTile;
  const int parts = static_cast<int>(std::min<std::int64_t>(threads, tiles));
#pragma omp parallel for num_threads(parts) schedule(static, 1)
  for (int part = 0; part < parts; ++part) {
    const std::int64_t begin = std::min(extent, tiles * part / parts * kTile);
    const std::int64_t end = std::min(extent, tiles * (part + 1) / parts * kTile);
    if (begin >= end) continue;
    if (by_rows) {  // rows [begin, end) of op(a) and of c
      const float* a_part = trans_a ? a + begin : a + begin * lda;
      gemm_serial(trans_a, trans_b, end - begin, N, K, alpha, a_part, lda, b, ldb, beta,
                  c + begin * ldc, ldc);
    } else {  // columns [begin, end) of op(b) and of c
      const float* b_part = trans_b ? b + begin * ldb : b + begin;
      gemm_serial(trans_a, trans_b, M, end - begin, K, alpha, a, lda, b_part, ldb, beta,
                  c + begin, ldc);
    }
  }
}

}  // namespace scion::runtime::cpu
