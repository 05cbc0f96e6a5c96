// Sequence pooling for classification heads: one vector per sequence from (B, S, C).
//
// Real tokens occupy positions [offset, offset + lengths[b]) (offset = number of prompt
// tokens before them; lengths null means S - offset). kCls takes the first real token,
// kMean averages the real tokens, kLast takes the last real token.
// Backward assigns dinp (=) over the whole (B, S, C) block.
#pragma once

#include <cstdint>

#include "runtime/op_types.h"

namespace scion::runtime::cpu {

void pool_forward(float* out, const float* inp, const std::int32_t* lengths, int B, int S,
                  int offset, int C, PoolMode mode);

void pool_backward(float* dinp, const float* dout, const std::int32_t* lengths, int B, int S,
                   int offset, int C, PoolMode mode);

}  // namespace scion::runtime::cpu
