#include "runtime/cpu/swiglu.h"

#include <cmath>

#include "runtime/cpu/parallel.h"

namespace scion::runtime::cpu {

void swiglu_forward(float* out, const float* gate, const float* up, std::int64_t N) {
#pragma omp parallel for schedule(static) if (worth_parallel(N))
  for (std::int64_t i = 0; i < N; ++i) {
    const float g = gate[i];
    out[i] = g / (1.0f + std::exp(-g)) * up[i];
  }
}

// d silu(g)/dg = s (1 + g (1 − s)) with s = sigmoid(g).
void swiglu_backward(float* dgate, float* dup, const float* dout, const float* gate,
                     const float* up, std::int64_t N) {
#pragma omp parallel for schedule(static) if (worth_parallel(N))
  for (std::int64_t i = 0; i < N; ++i) {
    const float g = gate[i];
    const float s = 1.0f / (1.0f + std::exp(-g));
    dgate[i] = dout[i] * up[i] * s * (1.0f + g * (1.0f - s));
    dup[i] = dout[i] * g * s;
  }
}

}  // namespace scion::runtime::cpu
