#include "runtime/cpu/layernorm.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <vector>

#include "runtime/cpu/parallel.h"

namespace scion::runtime::cpu {

void layernorm_forward(float* out, float* mean, float* rstd, const float* inp,
                       const float* weight, const float* bias, std::int64_t N, int C,
                       float eps) {
#pragma omp parallel for schedule(static) if (worth_parallel(N * C))
  for (std::int64_t n = 0; n < N; ++n) {
    const float* x = inp + n * C;
    float m = 0.0f;
    for (int c = 0; c < C; ++c) m += x[c];
    m /= static_cast<float>(C);
    float v = 0.0f;
    for (int c = 0; c < C; ++c) v += (x[c] - m) * (x[c] - m);
    v /= static_cast<float>(C);
    const float s = 1.0f / std::sqrt(v + eps);
    float* o = out + n * C;
    for (int c = 0; c < C; ++c) o[c] = (x[c] - m) * s * weight[c] + bias[c];
    mean[n] = m;
    rstd[n] = s;
  }
}

void layernorm_backward(float* dinp, float* dweight, float* dbias, const float* dout,
                        const float* inp, const float* weight, const float* mean,
                        const float* rstd, std::int64_t N, int C, GradMode mode) {
#pragma omp parallel for schedule(static) if (worth_parallel(N * C))
  for (std::int64_t n = 0; n < N; ++n) {
    const float* dy = dout + n * C;
    const float* x = inp + n * C;
    float* dx = dinp + n * C;
    float dnorm_mean = 0.0f, dnorm_norm_mean = 0.0f;
    for (int c = 0; c < C; ++c) {
      const float norm = (x[c] - mean[n]) * rstd[n];
      const float dnorm = weight[c] * dy[c];
      dnorm_mean += dnorm;
      dnorm_norm_mean += dnorm * norm;
    }
    dnorm_mean /= static_cast<float>(C);
    dnorm_norm_mean /= static_cast<float>(C);
    for (int c = 0; c < C; ++c) {
      const float norm = (x[c] - mean[n]) * rstd[n];
      const float g = (weight[c] * dy[c] - dnorm_mean - norm * dnorm_norm_mean) * rstd[n];
      dx[c] = mode == GradMode::kAccumulate ? dx[c] + g : g;
    }
  }
  if (!dweight && !dbias) return;
  // Parameter gradients: each thread takes blocks of channels and walks the rows in order,
  // so every sum has one fixed order (deterministic for any thread count), and the inner
  // loop runs along a row's contiguous channels, where it vectorises; walking one channel
  // down the rows (stride C) cost more than the rest of the backward pass.
  constexpr int kBlock = 64;
  const int blocks = (C + kBlock - 1) / kBlock;
#pragma omp parallel for schedule(static) if (worth_parallel(N * C))
  for (int block = 0; block < blocks; ++block) {
    const int c0 = block * kBlock, width = std::min(kBlock, C - c0);
    float dw[kBlock] = {}, db[kBlock] = {};
    for (std::int64_t n = 0; n < N; ++n) {
      const float* dy = dout + n * C + c0;
      const float* x = inp + n * C + c0;
      const float m = mean[n], s = rstd[n];
      for (int c = 0; c < width; ++c) {
        dw[c] += (x[c] - m) * s * dy[c];
        db[c] += dy[c];
      }
    }
    for (int c = 0; c < width; ++c) {
      if (dweight) dweight[c0 + c] += dw[c];
      if (dbias) dbias[c0 + c] += db[c];
    }
  }
}

}  // namespace scion::runtime::cpu
