// Layer normalisation over the last dimension of N rows of C values.
//
// Forward saves each row's mean and 1/std for the backward pass, so backward needs no
// epsilon. `eps` is the model's (BERT's layer_norm_eps is 1e-12; scion's own models 1e-5).
// Gradients: dweight, dbias accumulate (+=); dinp is assigned (=) with GradMode::kAssign
// or added (+=) with GradMode::kAccumulate, for inputs that also feed another branch
// (the residual stream). dweight/dbias may be null (frozen).
#pragma once

#include <cstdint>

#include "runtime/op_types.h"

namespace scion::runtime::cpu {

void layernorm_forward(float* out, float* mean, float* rstd, const float* inp,
                       const float* weight, const float* bias, std::int64_t N, int C,
                       float eps = kLayerNormEps);

void layernorm_backward(float* dinp, float* dweight, float* dbias, const float* dout,
                        const float* inp, const float* weight, const float* mean,
                        const float* rstd, std::int64_t N, int C, GradMode mode);

}  // namespace scion::runtime::cpu
