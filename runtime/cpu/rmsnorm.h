// Root-mean-square normalisation (Llama's RMSNorm) over the last dimension of N rows of
// C values: out = x · rstd · weight with rstd = 1 / sqrt(mean(x²) + eps). No mean is
// subtracted and there is no bias.
//
// Forward saves each row's rstd for the backward pass. Gradients: dweight accumulates
// (+=) and may be null (frozen); dinp is assigned (=) with GradMode::kAssign or added (+=)
// with GradMode::kAccumulate, for inputs that also feed the residual stream.
#pragma once

#include <cstdint>

#include "runtime/op_types.h"

namespace scion::runtime::cpu {

void rmsnorm_forward(float* out, float* rstd, const float* inp, const float* weight,
                     std::int64_t N, int C, float eps);

void rmsnorm_backward(float* dinp, float* dweight, const float* dout, const float* inp,
                      const float* weight, const float* rstd, std::int64_t N, int C,
                      GradMode mode);

}  // namespace scion::runtime::cpu
