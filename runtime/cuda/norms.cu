// LayerNorm and RMSNorm (runtime/cpu/layernorm.h, rmsnorm.h), llm.c style: one warp per
// row for the forward and the input gradient, its sums by warp shuffles. Parameter
// gradients are sums over rows: block-level partial sums over chunks of rows, added in a
// fixed order (column_sums.cuh), so they use the whole device, without atomics, and a run
// repeats its bits.
#include "runtime/cuda/column_sums.cuh"
#include "runtime/cuda/device_math.cuh"
#include "runtime/cuda/kernels.h"

namespace scion::runtime::cuda {
namespace {

constexpr int kWarpsPerBlock = 8;

__device__ inline std::int64_t warp_row() {
  return static_cast<std::int64_t>(blockIdx.x) * kWarpsPerBlock + threadIdx.x / 32;
}

unsigned row_blocks(std::int64_t N) {
  return static_cast<unsigned>((N + kWarpsPerBlock - 1) / kWarpsPerBlock);
}

__global__ void layernorm_forward_kernel(float* out, float* mean, float* rstd, const float* inp,
                                         const float* weight, const float* bias, std::int64_t N,
                                         int C, float eps) {
  const std::int64_t row = warp_row();
  if (row >= N) return;
  const int lane = threadIdx.x % 32;
  const float* x = inp + row * C;
  float sum = 0.0f;
  for (int c = lane; c < C; c += 32) sum += x[c];
  const float m = warp_sum(sum) / static_cast<float>(C);
  float var = 0.0f;
  for (int c = lane; c < C; c += 32) var += (x[c] - m) * (x[c] - m);
  const float s = 1.0f / sqrtf(warp_sum(var) / static_cast<float>(C) + eps);
  float* o = out + row * C;
  for (int c = lane; c < C; c += 32) o[c] = (x[c] - m) * s * weight[c] + bias[c];
  if (lane == 0) {
    mean[row] = m;
    rstd[row] = s;
  }
}

__global__ void layernorm_backward_input(float* dinp, const float* dout, const float* inp,
                                         const float* weight, const float* mean,
                                         const float* rstd, std::int64_t N, int C,
                                         bool accumulate) {
  const std::int64_t row = warp_row();
  if (row >= N) return;
  const int lane = threadIdx.x % 32;
  const float* dy = dout + row * C;
  const float* x = inp + row * C;
  float* dx = dinp + row * C;
  const float m = mean[row], r = rstd[row];
  float dnorm_mean = 0.0f, dnorm_norm_mean = 0.0f;
  for (int c = lane; c < C; c += 32) {
    const float norm = (x[c] - m) * r;
    const float dnorm = weight[c] * dy[c];
    dnorm_mean += dnorm;
    dnorm_norm_mean += dnorm * norm;
  }
  dnorm_mean = warp_sum(dnorm_mean) / static_cast<float>(C);
  dnorm_norm_mean = warp_sum(dnorm_norm_mean) / static_cast<float>(C);
  for (int c = lane; c < C; c += 32) {
    const float norm = (x[c] - m) * r;
    const float g = (weight[c] * dy[c] - dnorm_mean - norm * dnorm_norm_mean) * r;
    dx[c] = accumulate ? dx[c] + g : g;
  }
}

__global__ void rmsnorm_forward_kernel(float* out, float* rstd, const float* inp,
                                       const float* weight, std::int64_t N, int C, float eps) {
  const std::int64_t row = warp_row();
  if (row >= N) return;
  const int lane = threadIdx.x % 32;
  const float* x = inp + row * C;
  float ms = 0.0f;
  for (int c = lane; c < C; c += 32) ms += x[c] * x[c];
  const float s = 1.0f / sqrtf(warp_sum(ms) / static_cast<float>(C) + eps);
  float* o = out + row * C;
  for (int c = lane; c < C; c += 32) o[c] = x[c] * s * weight[c];
  if (lane == 0) rstd[row] = s;
}

__global__ void rmsnorm_backward_input(float* dinp, const float* dout, const float* inp,
                                       const float* weight, const float* rstd, std::int64_t N,
                                       int C, bool accumulate) {
  const std::int64_t row = warp_row();
  if (row >= N) return;
  const int lane = threadIdx.x % 32;
  const float* dy = dout + row * C;
  const float* x = inp + row * C;
  float* dx = dinp + row * C;
  const float r = rstd[row];
  float dot = 0.0f;
  for (int c = lane; c < C; c += 32) dot += weight[c] * dy[c] * x[c];
  const float k = r * r * r * warp_sum(dot) / static_cast<float>(C);
  for (int c = lane; c < C; c += 32) {
    const float g = r * weight[c] * dy[c] - x[c] * k;
    dx[c] = accumulate ? dx[c] + g : g;
  }
}

}  // namespace

void layernorm_forward(float* out, float* mean, float* rstd, const float* inp,
                       const float* weight, const float* bias, std::int64_t N, int C, float eps,
                       cudaStream_t stream) {
  if (N <= 0) return;
  layernorm_forward_kernel<<<row_blocks(N), kWarpsPerBlock * 32, 0, stream>>>(
      out, mean, rstd, inp, weight, bias, N, C, eps);
}

std::int64_t norm_backward_scratch(std::int64_t N, int C) { return column_sum_scratch(2, N, C); }

void layernorm_backward(float* dinp, float* dweight, float* dbias, const float* dout,
                        const float* inp, const float* weight, const float* mean, const float* rstd,
                        std::int64_t N, int C, GradMode mode, float* scratch, cudaStream_t stream) {
  if (N <= 0) return;
  layernorm_backward_input<<<row_blocks(N), kWarpsPerBlock * 32, 0, stream>>>(
      dinp, dout, inp, weight, mean, rstd, N, C, mode == GradMode::kAccumulate);
  if (!dweight && !dbias) return;
  // dweight[c] += Σ_n (x - mean) · rstd · dy, dbias[c] += Σ_n dy
  column_sums<2>(
      {{dweight, dbias}}, scratch, N, C,
      [=] __device__(std::int64_t n, int c, float* sums) {
        const float dy = dout[n * C + c];
        sums[0] += (inp[n * C + c] - mean[n]) * rstd[n] * dy;
        sums[1] += dy;
      },
      stream);
}

void rmsnorm_forward(float* out, float* rstd, const float* inp, const float* weight,
                     std::int64_t N, int C, float eps, cudaStream_t stream) {
  if (N <= 0) return;
  rmsnorm_forward_kernel<<<row_blocks(N), kWarpsPerBlock * 32, 0, stream>>>(out, rstd, inp,
                                                                            weight, N, C, eps);
}

void rmsnorm_backward(float* dinp, float* dweight, const float* dout, const float* inp,
                      const float* weight, const float* rstd, std::int64_t N, int C, GradMode mode,
                      float* scratch, cudaStream_t stream) {
  if (N <= 0) return;
  rmsnorm_backward_input<<<row_blocks(N), kWarpsPerBlock * 32, 0, stream>>>(
      dinp, dout, inp, weight, rstd, N, C, mode == GradMode::kAccumulate);
  if (!dweight) return;
  // dweight[c] += Σ_n x · rstd · dy
  column_sums<1>(
      {{dweight}}, scratch, N, C,
      [=] __device__(std::int64_t n, int c, float* sums) {
        sums[0] += inp[n * C + c] * rstd[n] * dout[n * C + c];
      },
      stream);
}

}  // namespace scion::runtime::cuda
