#include "runtime/cpu/cross_entropy.h"

#include <cmath>

#include "runtime/cpu/parallel.h"

namespace scion::runtime::cpu {

std::int64_t cross_entropy_forward(float* losses, float* probs, const float* logits,
                                   const std::int32_t* targets, std::int64_t N, int V) {
  std::int64_t counted = 0;
#pragma omp parallel for schedule(static) reduction(+ : counted) if (worth_parallel(N * V))
  for (std::int64_t n = 0; n < N; ++n) {
    const float* z = logits + n * V;
    float* p = probs + n * V;
    float maxval = z[0];
    for (int i = 1; i < V; ++i) maxval = z[i] > maxval ? z[i] : maxval;
    float sum = 0.0f;
    for (int i = 0; i < V; ++i) {
      p[i] = std::exp(z[i] - maxval);
      sum += p[i];
    }
    for (int i = 0; i < V; ++i) p[i] /= sum;
    const std::int32_t target = targets[n];
    if (target == kIgnoreIndex) {
      losses[n] = 0.0f;
      continue;
    }
    // log-sum-exp form keeps precision when the target's probability underflows
    losses[n] = std::log(sum) + maxval - z[target];
    ++counted;
  }
  return counted;
}

void cross_entropy_backward(float* dlogits, const float* probs, const std::int32_t* targets,
                            float scale, std::int64_t N, int V) {
#pragma omp parallel for schedule(static) if (worth_parallel(N * V))
  for (std::int64_t n = 0; n < N; ++n) {
    float* d = dlogits + n * V;
    const float* p = probs + n * V;
    const std::int32_t target = targets[n];
    if (target == kIgnoreIndex) {
      for (int i = 0; i < V; ++i) d[i] = 0.0f;
      continue;
    }
    for (int i = 0; i < V; ++i) d[i] = scale * (p[i] - (i == target ? 1.0f : 0.0f));
  }
}

void cross_entropy_backward_weighted(float* dlogits, const float* probs,
                                     const std::int32_t* targets, const float* weights, float scale,
                                     std::int64_t N, int V) {
#pragma omp parallel for schedule(static) if (worth_parallel(N * V))
  for (std::int64_t n = 0; n < N; ++n) {
    float* d = dlogits + n * V;
    const float* p = probs + n * V;
    const std::int32_t target = targets[n];
    if (target == kIgnoreIndex) {
      for (int i = 0; i < V; ++i) d[i] = 0.0f;
      continue;
    }
    const float s = scale * weights[target];
    for (int i = 0; i < V; ++i) d[i] = s * (p[i] - (i == target ? 1.0f : 0.0f));
  }
}

}  // namespace scion::runtime::cpu
