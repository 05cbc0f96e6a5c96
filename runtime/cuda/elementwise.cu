// Activations and vector arithmetic, one thread per element (runtime/cpu/gelu.h,
// swiglu.h, elementwise.h). The CPU's tanh-GELU uses its own vectorised exp; here the
// device's tanhf, expf and erff, which agree with it to a few ulps.
#include "runtime/cuda/device_math.cuh"
#include "runtime/cuda/kernels.h"

namespace scion::runtime::cuda {
namespace {
constexpr float kSqrt2OverPi = 0.7978845608028654f;
constexpr float kCubic = 0.044715f;
constexpr float kInvSqrt2 = 0.7071067811865476f;
constexpr float kInvSqrt2Pi = 0.3989422804014327f;

__global__ void squared_norm_partials(double* partials, const float* x, std::int64_t N) {
  double sum = 0.0;
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < N;
       i += stride)
    sum += static_cast<double>(x[i]) * x[i];
  sum = block_sum(sum);
  if (threadIdx.x == 0) partials[blockIdx.x] = sum;
}

__global__ void sum_partials(double* result, const double* partials, int n) {
  double sum = 0.0;
  for (int i = threadIdx.x; i < n; i += blockDim.x) sum += partials[i];
  sum = block_sum(sum);
  if (threadIdx.x == 0) *result = sum;
}

// Every block decides on its own (its first thread sums the norms in op_types.h's
// order, in double, as global_norm does), so no second launch and no host read is needed.
__global__ void clip_to_global_norm_kernel(float* x, std::int64_t N, const double* squared_norms,
                                           int count, float max_norm) {
  __shared__ float scale;
  __shared__ bool clip;
  if (threadIdx.x == 0) {
    double sum = 0.0;
    for (int i = 0; i < count; ++i) sum += squared_norms[i];
    const float norm = static_cast<float>(sqrt(sum));
    clip = norm > max_norm;
    scale = clip ? max_norm / (norm + kClipEpsilon) : 1.0f;
  }
  __syncthreads();
  if (!clip) return;
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < N;
       i += stride)
    x[i] *= scale;
}

}  // namespace

void gelu_forward(float* out, const float* inp, std::int64_t N, cudaStream_t stream) {
  for_each_index(N, stream, [=] __device__(std::int64_t i) {
    const float x = inp[i];
    out[i] = 0.5f * x * (1.0f + tanhf(kSqrt2OverPi * (x + kCubic * x * x * x)));
  });
}

void gelu_backward(float* dinp, const float* inp, const float* dout, std::int64_t N,
                   cudaStream_t stream) {
  for_each_index(N, stream, [=] __device__(std::int64_t i) {
    const float x = inp[i];
    const float th = tanhf(kSqrt2OverPi * (x + kCubic * x * x * x));
    const float sech2 = 1.0f - th * th;
    const float du = kSqrt2OverPi * (1.0f + 3.0f * kCubic * x * x);
    dinp[i] = dout[i] * (0.5f * (1.0f + th) + 0.5f * x * sech2 * du);
  });
}

void gelu_erf_forward(float* out, const float* inp, std::int64_t N, cudaStream_t stream) {
  for_each_index(N, stream, [=] __device__(std::int64_t i) {
    out[i] = 0.5f * inp[i] * (1.0f + erff(inp[i] * kInvSqrt2));
  });
}

void gelu_erf_backward(float* dinp, const float* inp, const float* dout, std::int64_t N,
                       cudaStream_t stream) {
  for_each_index(N, stream, [=] __device__(std::int64_t i) {
    const float x = inp[i];
    const float cdf = 0.5f * (1.0f + erff(x * kInvSqrt2));
    const float pdf = kInvSqrt2Pi * expf(-0.5f * x * x);
    dinp[i] = dout[i] * (cdf + x * pdf);
  });
}

void tanh_forward(float* out, const float* inp, std::int64_t N, cudaStream_t stream) {
  for_each_index(N, stream, [=] __device__(std::int64_t i) { out[i] = tanhf(inp[i]); });
}

// dinp may equal dout (the model passes one buffer for both).
void tanh_backward(float* dinp, const float* out, const float* dout, std::int64_t N,
                   cudaStream_t stream) {
  for_each_index(N, stream, [=] __device__(std::int64_t i) {
    dinp[i] = dout[i] * (1.0f - out[i] * out[i]);
  });
}

void swiglu_forward(float* out, const float* gate, const float* up, std::int64_t N,
                    cudaStream_t stream) {
  for_each_index(N, stream, [=] __device__(std::int64_t i) {
    const float g = gate[i];
    out[i] = g / (1.0f + expf(-g)) * up[i];
  });
}

void swiglu_backward(float* dgate, float* dup, const float* dout, const float* gate,
                     const float* up, std::int64_t N, cudaStream_t stream) {
  for_each_index(N, stream, [=] __device__(std::int64_t i) {
    const float g = gate[i], u = up[i], d = dout[i];  // read all first: outputs may alias
    const float s = 1.0f / (1.0f + expf(-g));
    dgate[i] = d * u * s * (1.0f + g * (1.0f - s));
    dup[i] = d * g * s;
  });
}

void residual_forward(float* out, const float* inp1, const float* inp2, std::int64_t N,
                      cudaStream_t stream) {
  for_each_index(N, stream, [=] __device__(std::int64_t i) { out[i] = inp1[i] + inp2[i]; });
}

void add_inplace(float* dst, const float* src, float scale, std::int64_t N, cudaStream_t stream) {
  for_each_index(N, stream, [=] __device__(std::int64_t i) { dst[i] += scale * src[i]; });
}

void scale_inplace(float* x, float scale, std::int64_t N, cudaStream_t stream) {
  for_each_index(N, stream, [=] __device__(std::int64_t i) { x[i] *= scale; });
}

void squared_norm(double* result, double* partials, const float* x, std::int64_t N,
                  cudaStream_t stream) {
  squared_norm_partials<<<kNormBlocks, kBlock, 0, stream>>>(partials, x, N);
  sum_partials<<<1, kBlock, 0, stream>>>(result, partials, kNormBlocks);
}

void clip_to_global_norm(float* x, std::int64_t N, const double* squared_norms, int count,
                         float max_norm, cudaStream_t stream) {
  if (N <= 0) return;
  constexpr unsigned kMaxBlocks = 1024;  // each block sums the norms once: keep them few
  const unsigned blocks = blocks_for(N) < kMaxBlocks ? blocks_for(N) : kMaxBlocks;
  clip_to_global_norm_kernel<<<blocks, kBlock, 0, stream>>>(x, N, squared_norms, count, max_norm);
}

}  // namespace scion::runtime::cuda
