// Token (+ position) embeddings with optional prompt rows in front (runtime/cpu/embedding.h).
// The forward is one thread per output element. The backward sums rows into embedding
// rows that repeat (the same token twice): as on the CPU, one thread per channel walks
// every row in order, so nothing races and the order of each sum is fixed; the
// parallelism is C threads, which is enough for the small gradient this is, and keeps
// the result free of atomics (deterministic).
#include "runtime/cuda/device_math.cuh"
#include "runtime/cuda/kernels.h"

namespace scion::runtime::cuda {
namespace {

__global__ void embedding_backward_kernel(float* dwte, float* dwpe, float* dprompt,
                                          const float* dout, const std::int32_t* inp, int B,
                                          int T, int P, int C) {
  const int c = blockIdx.x * blockDim.x + threadIdx.x;
  if (c >= C) return;
  const int S = P + T;
  if (dprompt)
    for (int s = 0; s < P; ++s) dprompt[static_cast<std::int64_t>(s) * C + c] = 0.0f;
  for (int b = 0; b < B; ++b)
    for (int s = 0; s < S; ++s) {
      const float g = dout[(static_cast<std::int64_t>(b) * S + s) * C + c];
      if (dwpe) dwpe[static_cast<std::int64_t>(s) * C + c] += g;
      if (s < P) {
        if (dprompt) dprompt[static_cast<std::int64_t>(s) * C + c] += g;
      } else if (dwte) {
        dwte[static_cast<std::int64_t>(inp[b * T + (s - P)]) * C + c] += g;
      }
    }
}

}  // namespace

void embedding_forward(float* out, const std::int32_t* inp, const float* wte, const float* wpe,
                       const float* prompt, int B, int T, int P, int C, cudaStream_t stream) {
  const int S = P + T;
  for_each_index(static_cast<std::int64_t>(B) * S * C, stream, [=] __device__(std::int64_t i) {
    const int c = static_cast<int>(i % C);
    const std::int64_t row = i / C;
    const int s = static_cast<int>(row % S), b = static_cast<int>(row / S);
    const float x = s < P ? prompt[static_cast<std::int64_t>(s) * C + c]
                          : wte[static_cast<std::int64_t>(inp[b * T + (s - P)]) * C + c];
    out[i] = wpe ? x + wpe[static_cast<std::int64_t>(s) * C + c] : x;
  });
}

void embedding_backward(float* dwte, float* dwpe, float* dprompt, const float* dout,
                        const std::int32_t* inp, int B, int T, int P, int C,
                        cudaStream_t stream) {
  if (C <= 0) return;
  embedding_backward_kernel<<<blocks_for(C), kBlock, 0, stream>>>(dwte, dwpe, dprompt, dout, inp,
                                                                   B, T, P, C);
}

}  // namespace scion::runtime::cuda
