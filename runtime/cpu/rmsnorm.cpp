#include "runtime/cpu/rmsnorm.h"

#include <algorithm>
#include <cmath>

#include "runtime/cpu/parallel.h"

namespace scion::runtime::cpu {

void rmsnorm_forward(float* out, float* rstd, const float* inp, const float* weight,
                     std::int64_t N, int C, float eps) {
#pragma omp parallel for schedule(static) if (worth_parallel(N * C))
  for (std::int64_t n = 0; n < N; ++n) {
    const float* x = inp + n * C;
    float ms = 0.0f;
    for (int c = 0; c < C; ++c) ms += x[c] * x[c];
    ms /= static_cast<float>(C);
    const float s = 1.0f / std::sqrt(ms + eps);
    float* o = out + n * C;
    for (int c = 0; c < C; ++c) o[c] = x[c] * s * weight[c];
    rstd[n] = s;
  }
}

// y_c = w_c x_c r with r = (Σ x² / C + eps)^(-1/2), so dr/dx_c = -r³ x_c / C and
// dx_c = r w_c dy_c - x_c r³ / C · Σ_j w_j dy_j x_j.
void rmsnorm_backward(float* dinp, float* dweight, const float* dout, const float* inp,
                      const float* weight, const float* rstd, std::int64_t N, int C,
                      GradMode mode) {
#pragma omp parallel for schedule(static) if (worth_parallel(N * C))
  for (std::int64_t n = 0; n < N; ++n) {
    const float* dy = dout + n * C;
    const float* x = inp + n * C;
    float* dx = dinp + n * C;
    const float r = rstd[n];
    float dot = 0.0f;
    for (int c = 0; c < C; ++c) dot += weight[c] * dy[c] * x[c];
    const float k = r * r * r * dot / static_cast<float>(C);
    for (int c = 0; c < C; ++c) {
      const float g = r * weight[c] * dy[c] - x[c] * k;
      dx[c] = mode == GradMode::kAccumulate ? dx[c] + g : g;
    }
  }
  if (!dweight) return;
  // Blocks of channels, rows walked in order: each sum has one fixed order, and the inner
  // loop runs along a row (as layernorm_backward's, which says why).
  constexpr int kBlock = 64;
  const int blocks = (C + kBlock - 1) / kBlock;
#pragma omp parallel for schedule(static) if (worth_parallel(N * C))
  for (int block = 0; block < blocks; ++block) {
    const int c0 = block * kBlock, width = std::min(kBlock, C - c0);
    float dw[kBlock] = {};
    for (std::int64_t n = 0; n < N; ++n) {
      const float* x = inp + n * C + c0;
      const float* dy = dout + n * C + c0;
      for (int c = 0; c < width; ++c) dw[c] += x[c] * rstd[n] * dy[c];
    }
    for (int c = 0; c < width; ++c) dweight[c0 + c] += dw[c];
  }
}

}  // namespace scion::runtime::cpu
