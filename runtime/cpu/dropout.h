// Inverted dropout with a counter-based random stream: element i of a call keeps its
// value with probability 1-p, scaled by 1/(1-p). Whether element i is kept depends only
// on (seed, stream, first + i), through base::splitmix64, never on thread count or on
// other rows of the batch, so a segment gets the same mask alone or co-batched, and runs
// are reproducible. `first` places the call in a longer stream: a data-parallel rank
// given rows [r0, r1) of a batch passes the index of row r0's first element, and draws
// the masks one process draws for those rows.
//
// mask (N) saves the scale applied to each element (0 or 1/(1-p)). out may equal inp.
// Backward assigns dinp (=) = dout · mask; dinp may equal dout.
#pragma once

#include <cstdint>

namespace scion::runtime::cpu {

void dropout_forward(float* out, float* mask, const float* inp, std::int64_t N, float p,
                     std::uint64_t seed, std::uint64_t stream, std::uint64_t first = 0);

void dropout_backward(float* dinp, const float* dout, const float* mask, std::int64_t N);

}  // namespace scion::runtime::cpu
