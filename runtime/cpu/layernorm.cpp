#include "runtime/cpu/layernorm.h"

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
  // Parameter gradients: parallel over channels so each sum has one fixed order.
#pragma omp parallel for schedule(static) if (worth_parallel(N * C))
  for (int c = 0; c < C; ++c) {
    float dw = 0.0f, db = 0.0f;
    for (std::int64_t n = 0; n < N; ++n) {
      const float dy = dout[n * C + c];
      dw += (inp[n * C + c] - mean[n]) * rstd[n] * dy;
      db += dy;
    }
    if (dweight) dweight[c] += dw;
    if (dbias) dbias[c] += db;
  }
}

}  // namespace scion::runtime::cpu
