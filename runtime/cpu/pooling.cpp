#include "runtime/cpu/pooling.h"

#include <cstddef>

#include "runtime/cpu/parallel.h"

namespace scion::runtime::cpu {
namespace {
struct Span {
  int begin, end;  // positions pooled over
};
Span pooled_span(const std::int32_t* lengths, int b, int S, int offset, PoolMode mode) {
  const int length = lengths ? lengths[b] : S - offset;
  switch (mode) {
    case PoolMode::kCls: return {offset, offset + 1};
    case PoolMode::kMean: return {offset, offset + length};
    case PoolMode::kLast: return {offset + length - 1, offset + length};
  }
  return {offset, offset + 1};
}
}  // namespace

void pool_forward(float* out, const float* inp, const std::int32_t* lengths, int B, int S,
                  int offset, int C, PoolMode mode) {
#pragma omp parallel for schedule(static) if (worth_parallel(std::int64_t{B} * S * C))
  for (int b = 0; b < B; ++b) {
    const Span span = pooled_span(lengths, b, S, offset, mode);
    const float weight = 1.0f / static_cast<float>(span.end - span.begin);
    float* o = out + static_cast<std::size_t>(b) * C;
    for (int c = 0; c < C; ++c) o[c] = 0.0f;
    for (int s = span.begin; s < span.end; ++s) {
      const float* x = inp + (static_cast<std::size_t>(b) * S + s) * C;
      for (int c = 0; c < C; ++c) o[c] += weight * x[c];
    }
  }
}

void pool_backward(float* dinp, const float* dout, const std::int32_t* lengths, int B, int S,
                   int offset, int C, PoolMode mode) {
#pragma omp parallel for schedule(static) if (worth_parallel(std::int64_t{B} * S * C))
  for (int b = 0; b < B; ++b) {
    const Span span = pooled_span(lengths, b, S, offset, mode);
    const float weight = 1.0f / static_cast<float>(span.end - span.begin);
    for (int s = 0; s < S; ++s) {
      float* d = dinp + (static_cast<std::size_t>(b) * S + s) * C;
      const bool pooled = s >= span.begin && s < span.end;
      for (int c = 0; c < C; ++c) d[c] = pooled ? weight * dout[static_cast<std::size_t>(b) * C + c] : 0.0f;
    }
  }
}

}  // namespace scion::runtime::cpu
