// (IA)³ on one linear layer over one row range of a co-batched pass
// (runtime/adapters/ia3/ia3_spec.h), exactly as PEFT 0.10's IA3Layer runs it:
//
//   output scaling (targets):        y = (W·x + b) ⊙ l          l: (out)
//   input scaling (feedforward):     y = W·(x ⊙ l) + b          l: (in)
//
// The frozen product runs once over every row of the batch (forward_pass.cpp); these
// functions scale a segment's rows before it (input) or after it (output), and take the
// gradients back through the scale. Parameter gradients accumulate (+=), activation
// gradients are assigned (=); a null dscale (a frozen ancestor's vector) is skipped.
// Every buffer is backend memory; the Backend's column scaling does the work, so every
// backend runs it.
#pragma once

#include <cstdint>

#include "runtime/backend.h"

namespace scion::runtime {

// (IA)³'s vector on one linear of a model's block: null `scale` when the linear has none
// (at most one per linear: spec::detail::check_ia3_overlaps).
struct Ia3Weights {
  const float* scale = nullptr;  // (out), or (in) when on_input
  float* dscale = nullptr;
  bool on_input = false;  // feedforward: scales the linear's input, not its output
};

// out (rows, out) ⊙= l. With `saved` non-null (training) the unscaled rows are kept there
// for ia3_output_backward; `out` may then be read again by later sites.
void ia3_output_forward(Backend& be, float* out, float* saved, const Ia3Weights& w,
                        std::int64_t rows, int out_features);

// Given dout (rows, out) of the scaled output: dpre = dout ⊙ l (the unscaled output's
// gradient, may be dout itself) and dl += Σ_rows dout ⊙ saved.
void ia3_output_backward(Backend& be, float* dpre, const float* dout, const float* saved,
                         const Ia3Weights& w, std::int64_t rows, int out_features);

// scaled (rows, in) = x ⊙ l (scaled may be x itself).
void ia3_input_forward(Backend& be, float* scaled, const float* x, const Ia3Weights& w,
                       std::int64_t rows, int in_features);

// Given dscaled (rows, in), the gradient of x ⊙ l: dx = dscaled ⊙ l (may be dscaled
// itself) and dl += Σ_rows dscaled ⊙ x.
void ia3_input_backward(Backend& be, float* dx, const float* dscaled, const float* x,
                        const Ia3Weights& w, std::int64_t rows, int in_features);

}  // namespace scion::runtime
