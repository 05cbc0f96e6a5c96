// Embedding: token + learned position embeddings, with optional virtual (prompt) tokens
// placed before the real ones.
//
// Layout: out (B, P+T, C). Row (b, p) for p < P is prompt[p] + wpe[p]; row (b, P+t) is
// wte[inp[b,t]] + wpe[P+t]. P = 0 without prompt tuning. wpe null: no position
// embeddings (rotary positions act inside attention instead).
// Gradients: dwte, dwpe accumulate (+=) because they are parameters; dprompt is assigned
// (=) because the model sums it into each prompt owner's parameter gradient itself.
// Any gradient pointer may be null to skip it (a frozen parameter).
#pragma once

#include <cstdint>

namespace scion::runtime::cpu {

void embedding_forward(float* out, const std::int32_t* inp, const float* wte, const float* wpe,
                       const float* prompt, int B, int T, int P, int C);

void embedding_backward(float* dwte, float* dwpe, float* dprompt, const float* dout,
                        const std::int32_t* inp, int B, int T, int P, int C);

}  // namespace scion::runtime::cpu
