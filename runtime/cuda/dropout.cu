// Inverted dropout with the CPU's counter-based mask stream (runtime/cpu/dropout.h): the
// same hash of (seed, stream, first + i), so element i gets the same mask on the GPU as on
// the CPU, alone or co-batched, and the op harness compares masks exactly.
#include "base/seeded_rng.h"
#include "runtime/cuda/device_math.cuh"
#include "runtime/cuda/kernels.h"

namespace scion::runtime::cuda {

// The device copy of the hash must be the CPU's, bit for bit.
static_assert(splitmix64(0) == base::splitmix64(0));
static_assert(splitmix64(0x123456789abcdefULL) == base::splitmix64(0x123456789abcdefULL));
static_assert(splitmix64(~0ULL) == base::splitmix64(~0ULL));

void dropout_forward(float* out, float* mask, const float* inp, std::int64_t N, float p,
                     std::uint64_t seed, std::uint64_t stream_id, std::uint64_t first,
                     cudaStream_t stream) {
  // Both computed on the host exactly as the CPU kernel computes them.
  const float keep_scale = 1.0f / (1.0f - p);
  const std::uint64_t key = base::splitmix64(seed ^ base::splitmix64(stream_id));
  for_each_index(N, stream, [=] __device__(std::int64_t i) {
    // top 24 bits -> uniform in [0, 1), exactly as on the CPU
    const std::uint64_t bits = splitmix64(key + first + static_cast<std::uint64_t>(i));
    const float u = static_cast<float>(bits >> 40) * (1.0f / 16777216.0f);
    const float m = u < p ? 0.0f : keep_scale;
    mask[i] = m;
    out[i] = inp[i] * m;  // out may equal inp
  });
}

void dropout_backward(float* dinp, const float* dout, const float* mask, std::int64_t N,
                      cudaStream_t stream) {
  for_each_index(N, stream, [=] __device__(std::int64_t i) { dinp[i] = dout[i] * mask[i]; });
}

}  // namespace scion::runtime::cuda
