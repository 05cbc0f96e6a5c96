// Element-wise helpers of the residual stream: residual add, copy, scaled add, fill.
//
// residual_forward: out = inp1 + inp2. Its backward is the identity into both inputs,
// which the model expresses with copy/add_inplace on the gradient buffers (assign into
// the first consumer, add for the others), so no separate residual_backward exists.
#pragma once

#include <cstdint>

namespace scion::runtime::cpu {

void residual_forward(float* out, const float* inp1, const float* inp2, std::int64_t N);
void copy(float* dst, const float* src, std::int64_t N);
// dst += scale · src
void add_inplace(float* dst, const float* src, float scale, std::int64_t N);
void fill(float* dst, float value, std::int64_t N);
// Sum of squares, in double so a global norm over millions of values keeps its digits.
double squared_norm(const float* x, std::int64_t N);
void scale_inplace(float* x, float scale, std::int64_t N);
// x *= max_norm / (norm + kClipEpsilon) when norm = global_norm(squared_norms, count)
// exceeds max_norm (runtime/op_types.h); else nothing.
void clip_to_global_norm(float* x, std::int64_t N, const double* squared_norms, int count,
                         float max_norm);

}  // namespace scion::runtime::cpu
