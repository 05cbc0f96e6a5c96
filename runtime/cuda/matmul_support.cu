// The parts of the linear layers that are not products (runtime/cpu/matmul.h,
// bf16_matmul.h): the bias broadcast before a product adds onto it, the bias gradient
// (column sums in a fixed order over the whole device: column_sums.cuh), and the
// rounding of fp32 operands to bf16 for the bf16 products.
#include "runtime/cuda/column_sums.cuh"
#include "runtime/cuda/device_math.cuh"
#include "runtime/cuda/kernels.h"

namespace scion::runtime::cuda {

void fill_rows(float* out, const float* bias, std::int64_t N, int OC, cudaStream_t stream) {
  for_each_index(N * OC, stream, [=] __device__(std::int64_t i) { out[i] = bias[i % OC]; });
}

std::int64_t bias_backward_scratch(std::int64_t N, int OC) { return column_sum_scratch(1, N, OC); }

void bias_backward(float* dbias, const float* dout, std::int64_t N, int OC, float* scratch,
                   cudaStream_t stream) {
  column_sums<1>(
      {{dbias}}, scratch, N, OC,
      [=] __device__(std::int64_t n, int o, float* sums) { sums[0] += dout[n * OC + o]; }, stream);
}

void round_to_bf16(std::uint16_t* dst, const float* src, std::int64_t n, cudaStream_t stream) {
  for_each_index(n, stream, [=] __device__(std::int64_t i) { dst[i] = float_to_bf16(src[i]); });
}

}  // namespace scion::runtime::cuda
