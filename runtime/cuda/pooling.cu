// One vector per sequence: the first real token, the mean of the real tokens or the last
// (runtime/cpu/pooling.h). Forward: one thread per (sequence, channel), summing the span in
// the CPU's order; backward: one thread per input element.
#include "runtime/cuda/device_math.cuh"
#include "runtime/cuda/kernels.h"

namespace scion::runtime::cuda {
namespace {

struct Span {
  int begin, end;
};

__device__ inline Span pooled_span(const std::int32_t* lengths, int b, int S, int offset,
                                   PoolMode mode) {
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
                  int offset, int C, PoolMode mode, cudaStream_t stream) {
  for_each_index(static_cast<std::int64_t>(B) * C, stream, [=] __device__(std::int64_t i) {
    const int b = static_cast<int>(i / C), c = static_cast<int>(i % C);
    const Span span = pooled_span(lengths, b, S, offset, mode);
    const float weight = 1.0f / static_cast<float>(span.end - span.begin);
    float sum = 0.0f;
    for (int s = span.begin; s < span.end; ++s)
      sum += weight * inp[(static_cast<std::int64_t>(b) * S + s) * C + c];
    out[i] = sum;
  });
}

void pool_backward(float* dinp, const float* dout, const std::int32_t* lengths, int B, int S,
                   int offset, int C, PoolMode mode, cudaStream_t stream) {
  for_each_index(static_cast<std::int64_t>(B) * S * C, stream, [=] __device__(std::int64_t i) {
    const int c = static_cast<int>(i % C);
    const std::int64_t row = i / C;
    const int s = static_cast<int>(row % S), b = static_cast<int>(row / S);
    const Span span = pooled_span(lengths, b, S, offset, mode);
    const float weight = 1.0f / static_cast<float>(span.end - span.begin);
    const bool pooled = s >= span.begin && s < span.end;
    dinp[i] = pooled ? weight * dout[static_cast<std::int64_t>(b) * C + c] : 0.0f;
  });
}

}  // namespace scion::runtime::cuda
