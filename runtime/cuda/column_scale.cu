// Per-column scaling and row norms (runtime/cpu/column_scale.h): the scaling one thread per
// element, dscale's sums over rows by column_sums (a fixed order, no atomics), and each
// row's norm by one warp in double, as the CPU sums it.
#include "runtime/cuda/column_sums.cuh"
#include "runtime/cuda/device_math.cuh"
#include "runtime/cuda/kernels.h"

namespace scion::runtime::cuda {
namespace {

constexpr int kWarpsPerBlock = 8;

__global__ void row_norms_kernel(float* out, const float* x, std::int64_t N, int C) {
  const std::int64_t row =
      static_cast<std::int64_t>(blockIdx.x) * kWarpsPerBlock + threadIdx.x / 32;
  if (row >= N) return;
  const int lane = threadIdx.x % 32;
  double sum = 0.0;
  for (int c = lane; c < C; c += 32) sum += static_cast<double>(x[row * C + c]) * x[row * C + c];
  sum = warp_sum(sum);
  if (lane == 0) out[row] = static_cast<float>(sqrt(sum));
}

}  // namespace

std::int64_t scale_columns_backward_scratch(std::int64_t N, int C) {
  return column_sum_scratch(1, N, C);
}

void scale_columns(float* out, const float* inp, const float* scale, const float* divisor,
                   std::int64_t N, int C, bool accumulate, cudaStream_t stream) {
  for_each_index(N * C, stream, [=] __device__(std::int64_t i) {
    const int c = static_cast<int>(i % C);
    const float y = inp[i] * (divisor ? scale[c] / divisor[c] : scale[c]);
    out[i] = accumulate ? out[i] + y : y;
  });
}

void scale_columns_backward(float* dinp, float* dscale, const float* dout, const float* inp,
                            const float* scale, const float* divisor, std::int64_t N, int C,
                            float* scratch, cudaStream_t stream) {
  // The column sums first: dinp may be dout itself.
  if (dscale)
    column_sums<1>(
        {{dscale}}, scratch, N, C,
        [=] __device__(std::int64_t n, int c, float* sums) {
          const float term = dout[n * C + c] * inp[n * C + c];
          sums[0] += divisor ? term / divisor[c] : term;
        },
        stream);
  if (dinp) scale_columns(dinp, dout, scale, divisor, N, C, false, stream);
}

void row_norms(float* out, const float* x, std::int64_t N, int C, cudaStream_t stream) {
  if (N <= 0) return;
  const unsigned blocks = static_cast<unsigned>((N + kWarpsPerBlock - 1) / kWarpsPerBlock);
  row_norms_kernel<<<blocks, kWarpsPerBlock * 32, 0, stream>>>(out, x, N, C);
}

}  // namespace scion::runtime::cuda
