#include "runtime/cpu/binary_cross_entropy.h"

#include <cmath>

#include "runtime/cpu/parallel.h"

namespace scion::runtime::cpu {

void bce_with_logits_forward(float* losses, float* probs, const float* logits, const float* targets,
                             std::int64_t N, int K) {
#pragma omp parallel for schedule(static) if (worth_parallel(N * K))
  for (std::int64_t n = 0; n < N; ++n) {
    float loss = 0.0f;
    for (int k = 0; k < K; ++k) {
      const std::int64_t i = n * K + k;
      const float z = logits[i];
      probs[i] = 1.0f / (1.0f + std::exp(-z));
      loss += std::fmax(z, 0.0f) - z * targets[i] + std::log1p(std::exp(-std::fabs(z)));
    }
    losses[n] = loss;
  }
}

void bce_with_logits_backward(float* dlogits, const float* probs, const float* targets, float scale,
                              std::int64_t N, int K) {
  const std::int64_t n = N * K;
#pragma omp parallel for schedule(static) if (worth_parallel(n))
  for (std::int64_t i = 0; i < n; ++i) dlogits[i] = scale * (probs[i] - targets[i]);
}

}  // namespace scion::runtime::cpu
