// Optimizer update kernels over one parameter tensor of n values.
//
// adamw_update: Adam with decoupled weight decay (Loshchilov & Hutter): the decay
// multiplies the parameter by (1 - lr·wd) separately from the adaptive step; `step` is
// 1-based for bias correction. sgd_update: heavy-ball momentum, v = μv + g (+ wd·θ),
// θ -= lr·v (PyTorch's convention, no dampening).
#pragma once

#include <cstdint>

namespace scion::runtime::cpu {

void adamw_update(float* param, const float* grad, float* m, float* v, std::int64_t n, float lr,
                  float beta1, float beta2, float eps, float weight_decay, int step);

void sgd_update(float* param, const float* grad, float* velocity, std::int64_t n, float lr,
                float momentum, float weight_decay);

}  // namespace scion::runtime::cpu
