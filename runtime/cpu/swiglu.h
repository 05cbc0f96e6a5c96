// The gated activation of Llama's MLP (SwiGLU): out = silu(gate) · up over N elements,
// with silu(x) = x · sigmoid(x); gate is gate_proj's output and up is up_proj's.
// Gradients: dgate and dup are assigned (=).
#pragma once

#include <cstdint>

namespace scion::runtime::cpu {

void swiglu_forward(float* out, const float* gate, const float* up, std::int64_t N);

void swiglu_backward(float* dgate, float* dup, const float* dout, const float* gate,
                     const float* up, std::int64_t N);

}  // namespace scion::runtime::cpu
