// AdamW and SGD with momentum, one thread per parameter (runtime/cpu/optimizer_kernels.h).
#include <cmath>

#include "runtime/cuda/device_math.cuh"
#include "runtime/cuda/kernels.h"

namespace scion::runtime::cuda {

void adamw_update(float* param, const float* grad, float* m, float* v, std::int64_t n, float lr,
                  float beta1, float beta2, float eps, float weight_decay, int step,
                  cudaStream_t stream) {
  // The bias corrections on the host, with the CPU's std::pow.
  const float correction1 = 1.0f - std::pow(beta1, static_cast<float>(step));
  const float correction2 = 1.0f - std::pow(beta2, static_cast<float>(step));
  for_each_index(n, stream, [=] __device__(std::int64_t i) {
    const float g = grad[i];
    const float mi = beta1 * m[i] + (1.0f - beta1) * g;
    const float vi = beta2 * v[i] + (1.0f - beta2) * g * g;
    m[i] = mi;
    v[i] = vi;
    const float m_hat = mi / correction1;
    const float v_hat = vi / correction2;
    param[i] -= lr * (m_hat / (sqrtf(v_hat) + eps) + weight_decay * param[i]);
  });
}

void sgd_update(float* param, const float* grad, float* velocity, std::int64_t n, float lr,
                float momentum, float weight_decay, cudaStream_t stream) {
  for_each_index(n, stream, [=] __device__(std::int64_t i) {
    const float g = grad[i] + weight_decay * param[i];
    const float vel = momentum * velocity[i] + g;
    velocity[i] = vel;
    param[i] -= lr * vel;
  });
}

}  // namespace scion::runtime::cuda
