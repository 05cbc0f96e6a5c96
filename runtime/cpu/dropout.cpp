#include "runtime/cpu/dropout.h"

#include "base/seeded_rng.h"
#include "runtime/cpu/parallel.h"

namespace scion::runtime::cpu {

void dropout_forward(float* out, float* mask, const float* inp, std::int64_t N, float p,
                     std::uint64_t seed, std::uint64_t stream) {
  const float keep_scale = 1.0f / (1.0f - p);
  const std::uint64_t key = base::splitmix64(seed ^ base::splitmix64(stream));
#pragma omp parallel for schedule(static) if (worth_parallel(N))
  for (std::int64_t i = 0; i < N; ++i) {
    // top 24 bits -> uniform in [0, 1)
    const std::uint64_t bits = base::splitmix64(key + static_cast<std::uint64_t>(i));
    const float u = static_cast<float>(bits >> 40) * (1.0f / 16777216.0f);
    mask[i] = u < p ? 0.0f : keep_scale;
    out[i] = inp[i] * mask[i];
  }
}

void dropout_backward(float* dinp, const float* dout, const float* mask, std::int64_t N) {
#pragma omp parallel for schedule(static) if (worth_parallel(N))
  for (std::int64_t i = 0; i < N; ++i) dinp[i] = dout[i] * mask[i];
}

}  // namespace scion::runtime::cpu
