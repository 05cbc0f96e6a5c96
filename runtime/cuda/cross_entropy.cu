// Softmax cross-entropy over V classes per row (runtime/cpu/cross_entropy.h), fused as in
// llm.c: one block per row finds the max and the sum of exponentials by block sums, writes
// the probabilities, and its first thread the loss. Rows whose target is kIgnoreIndex
// get loss 0 and are not counted. Also its class-weighted backward, and the multi-label
// head's binary cross-entropy with logits (runtime/cpu/binary_cross_entropy.h).
#include "runtime/cuda/device_math.cuh"
#include "runtime/cuda/kernels.h"

namespace scion::runtime::cuda {
namespace {

__global__ void cross_entropy_forward_kernel(float* losses, float* probs,
                                             unsigned long long* counted, const float* logits,
                                             const std::int32_t* targets, int V) {
  const std::int64_t n = blockIdx.x;
  const float* z = logits + n * V;
  float* p = probs + n * V;
  float maxval = -INFINITY;
  for (int i = threadIdx.x; i < V; i += blockDim.x) maxval = fmaxf(maxval, z[i]);
  maxval = block_max(maxval);
  float sum = 0.0f;
  for (int i = threadIdx.x; i < V; i += blockDim.x) {
    const float e = expf(z[i] - maxval);
    p[i] = e;
    sum += e;
  }
  sum = block_sum(sum);
  for (int i = threadIdx.x; i < V; i += blockDim.x) p[i] /= sum;
  if (threadIdx.x != 0) return;
  const std::int32_t target = targets[n];
  if (target == kIgnoreIndex) {
    losses[n] = 0.0f;
    return;
  }
  // log-sum-exp form keeps precision when the target's probability underflows
  losses[n] = logf(sum) + maxval - z[target];
  atomicAdd(counted, 1ULL);  // an integer count: the order does not matter
}

// One thread per row: a multi-label head has a few labels per row.
__global__ void bce_with_logits_forward_kernel(float* losses, float* probs, const float* logits,
                                               const float* targets, std::int64_t N, int K) {
  const std::int64_t n = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (n >= N) return;
  float loss = 0.0f;
  for (int k = 0; k < K; ++k) {
    const std::int64_t i = n * K + k;
    const float z = logits[i];
    probs[i] = 1.0f / (1.0f + expf(-z));
    loss += fmaxf(z, 0.0f) - z * targets[i] + log1pf(expf(-fabsf(z)));
  }
  losses[n] = loss;
}

}  // namespace

cudaError_t cross_entropy_forward(float* losses, float* probs, unsigned long long* counted,
                                  const float* logits, const std::int32_t* targets, std::int64_t N,
                                  int V, cudaStream_t stream) {
  if (const cudaError_t err = cudaMemsetAsync(counted, 0, sizeof *counted, stream);
      err != cudaSuccess)
    return err;
  if (N <= 0) return cudaSuccess;
  // One block per row: N stays far below the 2^31 - 1 blocks a grid may have.
  cross_entropy_forward_kernel<<<static_cast<unsigned>(N), kBlock, 0, stream>>>(
      losses, probs, counted, logits, targets, V);
  return cudaSuccess;
}

void cross_entropy_backward(float* dlogits, const float* probs, const std::int32_t* targets,
                            float scale, std::int64_t N, int V, cudaStream_t stream) {
  for_each_index(N * V, stream, [=] __device__(std::int64_t i) {
    const std::int64_t n = i / V;
    const int v = static_cast<int>(i % V);
    const std::int32_t target = targets[n];
    dlogits[i] = target == kIgnoreIndex ? 0.0f : scale * (probs[i] - (v == target ? 1.0f : 0.0f));
  });
}

void cross_entropy_backward_weighted(float* dlogits, const float* probs,
                                     const std::int32_t* targets, const float* weights, float scale,
                                     std::int64_t N, int V, cudaStream_t stream) {
  for_each_index(N * V, stream, [=] __device__(std::int64_t i) {
    const std::int64_t n = i / V;
    const int v = static_cast<int>(i % V);
    const std::int32_t target = targets[n];
    dlogits[i] = target == kIgnoreIndex
                     ? 0.0f
                     : scale * weights[target] * (probs[i] - (v == target ? 1.0f : 0.0f));
  });
}

void bce_with_logits_forward(float* losses, float* probs, const float* logits, const float* targets,
                             std::int64_t N, int K, cudaStream_t stream) {
  if (N <= 0) return;
  const auto blocks = static_cast<unsigned>((N + kBlock - 1) / kBlock);
  bce_with_logits_forward_kernel<<<blocks, kBlock, 0, stream>>>(losses, probs, logits, targets, N,
                                                                K);
}

void bce_with_logits_backward(float* dlogits, const float* probs, const float* targets, float scale,
                              std::int64_t N, int K, cudaStream_t stream) {
  for_each_index(N * K, stream,
                 [=] __device__(std::int64_t i) { dlogits[i] = scale * (probs[i] - targets[i]); });
}

}  // namespace scion::runtime::cuda
