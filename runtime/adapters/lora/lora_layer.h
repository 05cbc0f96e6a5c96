// LoRA on one linear layer over one row range of a co-batched pass
// (runtime/adapters/lora/lora_spec.h), beside the frozen product:
//
//   y += s · B·A·dropout(x)        A (r, in), B (out, r), s = spec::LoraSpec::scaling()
//
// or, with DoRA (`magnitude` set), the segment's output rows rewritten from W
// (dora_layer.h). The frozen product W·x + b has already run over every row of the batch
// (runtime/model/forward_pass.cpp); these functions add the adapter's term for the rows of
// one unit (forward) or segment (backward), and take the gradients back. Parameter
// gradients accumulate (+=); a null da/db/dmagnitude (a frozen ancestor's adapter) is
// skipped. Every buffer is backend memory and the Backend's ops do the work, so every
// backend runs it.
#pragma once

#include <cstdint>

#include "runtime/backend.h"

namespace scion::runtime {

// One LoRA (or DoRA) on one linear of a model's block, bound to its parameters.
struct LoraWeights {
  const float* a = nullptr;  // (r, in)
  const float* b = nullptr;  // (out, r)
  float* da = nullptr;
  float* db = nullptr;
  int rank = 0;
  float scale = 1.0f;        // spec::LoraSpec::scaling(): alpha / rank, or alpha / sqrt(rank)
  float dropout = 0.0f;      // on the LoRA input, only while this adapter is trained
  std::uint64_t stream = 0;  // dropout stream id of its linear (+ its position there)
  // DoRA (spec::LoraSpec::use_dora; dora_layer.h): the magnitude per output feature, null
  // for a plain LoRA.
  const float* magnitude = nullptr;  // (out)
  float* dmagnitude = nullptr;
};

// What one LoRA keeps over a segment's rows, from forward to backward.
struct LoraActivations {
  float* hidden = nullptr;   // (rows, r) A·x̃
  float* dropped = nullptr;  // (rows, in) x̃ = dropout(x), when dropout applies (else null)
  float* mask = nullptr;     // (rows, in)
  // DoRA only: W·x̃ + s·B·A·x̃, and the weight's row norms (per segment, not per row).
  float* combined = nullptr;  // (rows, out)
  float* norms = nullptr;     // (out)
};

// Scratch the backward pass (and DoRA's norms in the forward) may overwrite, shared by the
// segments: each sized for the widest use.
struct LoraScratch {
  float* dhidden = nullptr;      // (rows, r)
  float* dinput = nullptr;       // (rows, in), when dropout applies
  float* dora_weight = nullptr;  // (out·in) W + s·B·A while DoRA's norms are taken
  float* dcombined = nullptr;    // (rows, out) DoRA's gradient of `combined`
};

// Where the dropout mask of a LoRA's input comes from (runtime/cpu/dropout.h).
struct LoraDropout {
  std::uint64_t seed = 0, stream = 0, first_element = 0;
};

// out (rows, out) += s · B·A·dropout(x), or DoRA's rewrite of `out` from `weight` (out, in)
// (fp32). x (rows, in). With act.dropped set (training with dropout) the mask is drawn
// from `dropout` and x̃ kept there.
void lora_forward(Backend& be, float* out, const LoraActivations& act, const LoraScratch& scratch,
                  const float* x, const float* weight, const LoraWeights& lw,
                  const LoraDropout& dropout, std::int64_t rows, int in, int out_features);

// Given dout (rows, out), the gradient of the linear's output rows: the adapter's gradients
// (+=) and, when dx (rows, in) is not null, x's share added into it (+=), back through the
// dropout mask. x is what lora_forward read.
void lora_backward(Backend& be, float* dx, const LoraActivations& act, const LoraScratch& scratch,
                   const float* dout, const float* x, const float* weight, const LoraWeights& lw,
                   std::int64_t rows, int in, int out_features);

}  // namespace scion::runtime
