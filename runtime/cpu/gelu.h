// GELU with the tanh approximation (GPT-2, PyTorch approximate="tanh"), exact GELU, tanh.
// Backward assigns dinp (=).
#pragma once

#include <cstdint>

namespace scion::runtime::cpu {

void gelu_forward(float* out, const float* inp, std::int64_t N);
void gelu_backward(float* dinp, const float* inp, const float* dout, std::int64_t N);

// Exact GELU, x·Φ(x) = 0.5·x·(1 + erf(x/√2)): BERT's hidden_act "gelu" (PyTorch's
// default, approximate="none"). Backward assigns dinp (=).
void gelu_erf_forward(float* out, const float* inp, std::int64_t N);
void gelu_erf_backward(float* dinp, const float* inp, const float* dout, std::int64_t N);

// tanh, for BERT's pooler. Backward reads the forward's output (1 - out²) and assigns dinp.
void tanh_forward(float* out, const float* inp, std::int64_t N);
void tanh_backward(float* dinp, const float* out, const float* dout, std::int64_t N);

}  // namespace scion::runtime::cpu
