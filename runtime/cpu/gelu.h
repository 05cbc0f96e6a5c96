// GELU with the tanh approximation (GPT-2, BERT-as-trained, PyTorch approximate="tanh").
// Backward assigns dinp (=).
#pragma once

#include <cstdint>

namespace scion::runtime::cpu {

void gelu_forward(float* out, const float* inp, std::int64_t N);
void gelu_backward(float* dinp, const float* inp, const float* dout, std::int64_t N);

}  // namespace scion::runtime::cpu
