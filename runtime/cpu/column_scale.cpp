#include "runtime/cpu/column_scale.h"

#include <algorithm>
#include <cmath>

#include "runtime/cpu/parallel.h"

namespace scion::runtime::cpu {
namespace {

// Columns per task of the column sums: one cache line of each row at a time.
constexpr int kColumnBlock = 64;

float factor(const float* scale, const float* divisor, int c) {
  return divisor ? scale[c] / divisor[c] : scale[c];
}

}  // namespace

void scale_columns(float* out, const float* inp, const float* scale, const float* divisor,
                   std::int64_t N, int C, bool accumulate) {
#pragma omp parallel for schedule(static) if (worth_parallel(N * C))
  for (std::int64_t n = 0; n < N; ++n) {
    float* o = out + n * C;
    const float* x = inp + n * C;
    for (int c = 0; c < C; ++c) {
      const float y = x[c] * factor(scale, divisor, c);
      o[c] = accumulate ? o[c] + y : y;
    }
  }
}

void scale_columns_backward(float* dinp, float* dscale, const float* dout, const float* inp,
                            const float* scale, const float* divisor, std::int64_t N, int C) {
  // The column sums first: dinp may be dout itself.
  if (dscale) {
    const int blocks = (C + kColumnBlock - 1) / kColumnBlock;
#pragma omp parallel for schedule(static) if (worth_parallel(N * C))
    for (int b = 0; b < blocks; ++b) {
      const int c0 = b * kColumnBlock, c1 = std::min(C, c0 + kColumnBlock);
      double sums[kColumnBlock] = {};
      for (std::int64_t n = 0; n < N; ++n)
        for (int c = c0; c < c1; ++c)
          sums[c - c0] += static_cast<double>(dout[n * C + c]) * inp[n * C + c];
      for (int c = c0; c < c1; ++c)
        dscale[c] += static_cast<float>(divisor ? sums[c - c0] / divisor[c] : sums[c - c0]);
    }
  }
  if (dinp) scale_columns(dinp, dout, scale, divisor, N, C, false);
}

void row_norms(float* out, const float* x, std::int64_t N, int C) {
#pragma omp parallel for schedule(static) if (worth_parallel(N * C))
  for (std::int64_t n = 0; n < N; ++n) {
    double sum = 0.0;
    for (int c = 0; c < C; ++c) sum += static_cast<double>(x[n * C + c]) * x[n * C + c];
    out[n] = static_cast<float>(std::sqrt(sum));
  }
}

}  // namespace scion::runtime::cpu
