// The parts of the linear layers that are not products (runtime/cpu/matmul.h,
// bf16_matmul.h): the bias broadcast before a product adds onto it, the bias gradient
// (column sums, one thread per column over the rows in order: deterministic), and the
// rounding of fp32 operands to bf16 for the bf16 products.
#include "runtime/cuda/device_math.cuh"
#include "runtime/cuda/kernels.h"

namespace scion::runtime::cuda {
namespace {

__global__ void bias_backward_kernel(float* dbias, const float* dout, std::int64_t N, int OC) {
  const int o = blockIdx.x * blockDim.x + threadIdx.x;
  if (o >= OC) return;
  float sum = 0.0f;
  for (std::int64_t n = 0; n < N; ++n) sum += dout[n * OC + o];
  dbias[o] += sum;
}

}  // namespace

void fill_rows(float* out, const float* bias, std::int64_t N, int OC, cudaStream_t stream) {
  for_each_index(N * OC, stream, [=] __device__(std::int64_t i) { out[i] = bias[i % OC]; });
}

void bias_backward(float* dbias, const float* dout, std::int64_t N, int OC, cudaStream_t stream) {
  if (OC <= 0) return;
  bias_backward_kernel<<<blocks_for(OC), kBlock, 0, stream>>>(dbias, dout, N, OC);
}

void round_to_bf16(std::uint16_t* dst, const float* src, std::int64_t n, cudaStream_t stream) {
  for_each_index(n, stream, [=] __device__(std::int64_t i) { dst[i] = float_to_bf16(src[i]); });
}

}  // namespace scion::runtime::cuda
