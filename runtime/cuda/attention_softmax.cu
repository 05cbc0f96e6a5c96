// The row-wise parts of attention (runtime/cpu/attention.h): the masked softmax of the
// scaled scores and its backward, one warp per row of S = P + T keys. The products around
// them are cuBLAS's (cuda_backend.cu, attention_*).
#include "runtime/cuda/device_math.cuh"
#include "runtime/cuda/kernels.h"

namespace scion::runtime::cuda {
namespace {

constexpr int kWarpsPerBlock = 8;

// Row (b, h, t) of probs: query t sees every prefix key and key t' < lengths[b] (and, if
// causal, t' <= t; with a sliding window, only keys s of [0, S) with P + t - s <= window).
// Masked entries become exactly 0; a row with no visible key is all 0.
__global__ void softmax_kernel(float* probs, const std::int32_t* lengths, std::int64_t rows, int NH,
                               int T, int P, bool causal, int window) {
  const std::int64_t row = static_cast<std::int64_t>(blockIdx.x) * kWarpsPerBlock + threadIdx.x / 32;
  if (row >= rows) return;
  const int lane = threadIdx.x % 32;
  const int S = P + T;
  const int t = static_cast<int>(row % T);
  const int b = static_cast<int>(row / (static_cast<std::int64_t>(NH) * T));
  const int length = lengths ? lengths[b] : T;
  const int last_key = causal ? min(t + 1, length) : length;  // real keys [0, last)
  const int visible = P + max(last_key, 0);
  const int first = causal && window > 0 ? min(max(P + t - window, 0), S) : 0;
  float* p = probs + row * S;
  for (int j = lane; j < S; j += 32)
    if (j < first || j >= visible) p[j] = 0.0f;
  if (visible <= first) return;
  float maxval = -INFINITY;
  for (int j = first + lane; j < visible; j += 32) maxval = fmaxf(maxval, p[j]);
  maxval = warp_max(maxval);
  float sum = 0.0f;
  for (int j = first + lane; j < visible; j += 32) {
    const float e = expf(p[j] - maxval);
    p[j] = e;
    sum += e;
  }
  const float inv = 1.0f / warp_sum(sum);
  for (int j = first + lane; j < visible; j += 32) p[j] *= inv;
}

__global__ void softmax_backward_kernel(float* ds, const float* probs, std::int64_t rows, int S,
                                        float scale) {
  const std::int64_t row = static_cast<std::int64_t>(blockIdx.x) * kWarpsPerBlock + threadIdx.x / 32;
  if (row >= rows) return;
  const int lane = threadIdx.x % 32;
  const float* p = probs + row * S;
  float* d = ds + row * S;
  float weighted = 0.0f;
  for (int j = lane; j < S; j += 32) weighted += p[j] * d[j];
  weighted = warp_sum(weighted);
  for (int j = lane; j < S; j += 32) d[j] = p[j] * (d[j] - weighted) * scale;
}

unsigned row_blocks(std::int64_t rows) {
  return static_cast<unsigned>((rows + kWarpsPerBlock - 1) / kWarpsPerBlock);
}

}  // namespace

void attention_softmax(float* probs, const std::int32_t* lengths, int B, int NH, int T, int P,
                       bool causal, int window, cudaStream_t stream) {
  const std::int64_t rows = static_cast<std::int64_t>(B) * NH * T;
  if (rows <= 0) return;
  softmax_kernel<<<row_blocks(rows), kWarpsPerBlock * 32, 0, stream>>>(probs, lengths, rows, NH, T,
                                                                       P, causal, window);
}

void attention_softmax_backward(float* ds, const float* probs, std::int64_t rows, int S,
                                float scale, cudaStream_t stream) {
  if (rows <= 0) return;
  softmax_backward_kernel<<<row_blocks(rows), kWarpsPerBlock * 32, 0, stream>>>(ds, probs, rows,
                                                                                 S, scale);
}

}  // namespace scion::runtime::cuda
