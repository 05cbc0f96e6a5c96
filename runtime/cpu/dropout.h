// Inverted dropout with a counter-based random stream: element i of a call keeps its
// value with probability 1-p, scaled by 1/(1-p). Whether element i is kept depends only
// on (seed, stream, i), through base::splitmix64, never on thread count or on other rows
// of the batch, so a segment gets the same mask alone or co-batched, and runs are
// reproducible.
//
// mask (N) saves the scale applied to each element (0 or 1/(1-p)). out may equal inp.
// Backward assigns dinp (=) = dout · mask; dinp may equal dout.
#pragma once

#include <cstdint>

namespace scion::runtime::cpu {

void dropout_forward(float* out, float* mask, const float* inp, std::int64_t N, float p,
                     std::uint64_t seed, std::uint64_t stream);

void dropout_backward(float* dinp, const float* dout, const float* mask, std::int64_t N);

}  // namespace scion::runtime::cpu
