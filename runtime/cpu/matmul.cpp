#include "runtime/cpu/matmul.h"

#include <cstddef>

#include "runtime/cpu/gemm.h"
#include "runtime/cpu/parallel.h"

namespace scion::runtime::cpu {

void matmul_forward(float* out, const float* inp, const float* weight, const float* bias,
                    std::int64_t N, int C, int OC, GemmFn gemm_fn) {
  if (N == 0) return;
  if (bias) {
#pragma omp parallel for schedule(static) if (worth_parallel(N * OC))
    for (std::int64_t n = 0; n < N; ++n)
      for (int o = 0; o < OC; ++o) out[n * OC + o] = bias[o];
  }
  gemm_fn(false, true, N, OC, C, 1.0f, inp, C, weight, C, bias ? 1.0f : 0.0f, out, OC);
}

void matmul_forward_accumulate(float* out, const float* inp, const float* weight, float scale,
                               std::int64_t N, int C, int OC, GemmFn gemm_fn) {
  if (N == 0) return;
  gemm_fn(false, true, N, OC, C, scale, inp, C, weight, C, 1.0f, out, OC);
}

void matmul_backward(float* dinp, float* dweight, float* dbias, const float* dout,
                     const float* inp, const float* weight, float scale, std::int64_t N, int C,
                     int OC, GradMode mode, GemmFn gemm_fn) {
  if (N == 0) return;
  if (dinp)  // dinp (N, C) = scale · dout (N, OC) · weight (OC, C)
    gemm_fn(false, false, N, C, OC, scale, dout, OC, weight, C,
         mode == GradMode::kAccumulate ? 1.0f : 0.0f, dinp, C);
  if (dweight)  // dweight (OC, C) += scale · dout^T (OC, N) · inp (N, C)
    gemm_fn(true, false, OC, C, N, scale, dout, OC, inp, C, 1.0f, dweight, C);
  if (dbias) bias_backward(dbias, dout, N, OC);
}

void bias_backward(float* dbias, const float* dout, std::int64_t N, int OC) {
  const int blocks = (OC + 63) / 64;
#pragma omp parallel for schedule(static) if (worth_parallel(N * OC))
  for (int blk = 0; blk < blocks; ++blk) {
    const int begin = blk * 64, end = begin + 64 < OC ? begin + 64 : OC;
    float sum[64] = {};
    for (std::int64_t n = 0; n < N; ++n)
      for (int o = begin; o < end; ++o) sum[o - begin] += dout[n * OC + o];
    for (int o = begin; o < end; ++o) dbias[o] += sum[o - begin];
  }
}

}  // namespace scion::runtime::cpu
