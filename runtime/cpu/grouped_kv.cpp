#include "runtime/cpu/grouped_kv.h"

#include <cstddef>

#include "runtime/cpu/parallel.h"

namespace scion::runtime::cpu {

void repeat_kv_forward(float* out, const float* inp, std::int64_t N, int NKV, int groups, int D) {
  const std::int64_t in_width = static_cast<std::int64_t>(NKV) * D;
  const std::int64_t out_width = in_width * groups;
#pragma omp parallel for schedule(static) if (worth_parallel(N * out_width))
  for (std::int64_t n = 0; n < N; ++n)
    for (int h = 0; h < NKV * groups; ++h) {
      const float* src = inp + n * in_width + static_cast<std::int64_t>(h / groups) * D;
      float* dst = out + n * out_width + static_cast<std::int64_t>(h) * D;
      for (int d = 0; d < D; ++d) dst[d] = src[d];
    }
}

void repeat_kv_backward(float* dinp, const float* dout, std::int64_t N, int NKV, int groups,
                        int D) {
  const std::int64_t in_width = static_cast<std::int64_t>(NKV) * D;
  const std::int64_t out_width = in_width * groups;
#pragma omp parallel for schedule(static) if (worth_parallel(N * out_width))
  for (std::int64_t n = 0; n < N; ++n)
    for (int kv = 0; kv < NKV; ++kv) {
      float* dst = dinp + n * in_width + static_cast<std::int64_t>(kv) * D;
      for (int d = 0; d < D; ++d) dst[d] = 0.0f;
      for (int r = 0; r < groups; ++r) {
        const float* src = dout + n * out_width + (static_cast<std::int64_t>(kv) * groups + r) * D;
        for (int d = 0; d < D; ++d) dst[d] += src[d];
      }
    }
}

}  // namespace scion::runtime::cpu
