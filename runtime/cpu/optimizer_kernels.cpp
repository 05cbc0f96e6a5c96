#include "runtime/cpu/optimizer_kernels.h"

#include <cmath>

#include "runtime/cpu/parallel.h"

namespace scion::runtime::cpu {

void adamw_update(float* param, const float* grad, float* m, float* v, std::int64_t n, float lr,
                  float beta1, float beta2, float eps, float weight_decay, int step) {
  const float correction1 = 1.0f - std::pow(beta1, static_cast<float>(step));
  const float correction2 = 1.0f - std::pow(beta2, static_cast<float>(step));
#pragma omp parallel for schedule(static) if (worth_parallel(n))
  for (std::int64_t i = 0; i < n; ++i) {
    const float g = grad[i];
    m[i] = beta1 * m[i] + (1.0f - beta1) * g;
    v[i] = beta2 * v[i] + (1.0f - beta2) * g * g;
    const float m_hat = m[i] / correction1;
    const float v_hat = v[i] / correction2;
    param[i] -= lr * (m_hat / (std::sqrt(v_hat) + eps) + weight_decay * param[i]);
  }
}

void sgd_update(float* param, const float* grad, float* velocity, std::int64_t n, float lr,
                float momentum, float weight_decay) {
#pragma omp parallel for schedule(static) if (worth_parallel(n))
  for (std::int64_t i = 0; i < n; ++i) {
    const float g = grad[i] + weight_decay * param[i];
    velocity[i] = momentum * velocity[i] + g;
    param[i] -= lr * velocity[i];
  }
}

}  // namespace scion::runtime::cpu
