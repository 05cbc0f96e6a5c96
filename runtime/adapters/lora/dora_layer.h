// DoRA (weight-decomposed low-rank adaptation, Liu et al. 2024) on one linear layer, over
// one row range of a co-batched pass, exactly as PEFT 0.10's LoraLayer._apply_dora runs it:
//
//   y = W·x + b + (m / n − 1) ⊙ (W·x̃) + (m / n) ⊙ s·B·A·x̃,   n = ‖W + s·B·A‖ (per output row)
//
// where x̃ is the LoRA input after its dropout (x itself without), m the trained magnitude
// (out), s the LoRA scale (spec::LoraSpec::scaling) and n is held constant in the backward
// pass (PEFT's weight_norm.detach(), the paper's section 4.3). Without dropout this is
// m ⊙ (W + s·B·A)·x / n + b. The frozen product W·x + b has already run over every row of
// the batch (forward_pass.cpp); these functions add the rest for the rows of one segment.
//
// Buffers are backend memory: `combined` (rows, out) T = W·x̃ + s·B·(A·x̃), kept for the
// backward pass with `norms` (out); `weight_scratch` (out, in) holds W + s·B·A while the
// norms are taken. REQUIRES: W in fp32 (LoRA's LinearAdaptation::refusal, lora_method.cpp).
#pragma once

#include <cstdint>

#include "runtime/adapters/lora/lora_layer.h"
#include "runtime/backend.h"

namespace scion::runtime {

// norms[o] = ‖W[o, :] + s·(B·A)[o, :]‖₂.
void dora_weight_norms(Backend& be, float* norms, float* weight_scratch, const float* weight,
                       const LoraWeights& lw, int in, int out);

// out (rows, out) += m ⊙ T / n − W·x̃, with T = W·x̃ + s·hidden·Bᵀ written to `combined`.
// `x` is x̃ (rows, in); `hidden` = x̃·Aᵀ (rows, r), already computed.
void dora_forward(Backend& be, float* out, float* combined, const float* x, const float* hidden,
                  const float* weight, const LoraWeights& lw, const float* norms, std::int64_t rows,
                  int in, int out_features);

// Given dout (rows, out): lw.da, lw.db and lw.dmagnitude accumulate (+=, each skipped where
// null: a frozen ancestor's adapter); dx (rows, in), the gradient of x̃, is assigned or added
// per `mode` (null: not wanted). `dcombined` (rows, out) and `dhidden` (rows, r) are scratch.
void dora_backward(Backend& be, float* dx, GradMode mode, float* dcombined, float* dhidden,
                   const float* dout, const float* x, const float* hidden, const float* combined,
                   const float* norms, const float* weight, const LoraWeights& lw,
                   std::int64_t rows, int in, int out_features);

}  // namespace scion::runtime
