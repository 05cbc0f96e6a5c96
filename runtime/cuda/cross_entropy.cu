// Softmax cross-entropy over V classes per row (runtime/cpu/cross_entropy.h), fused as in
// llm.c: one block per row finds the max and the sum of exponentials by block sums, writes
// the probabilities, and its first thread the loss. Rows whose target is kIgnoreIndex
// get loss 0 and are not counted.
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

}  // namespace scion::runtime::cuda
