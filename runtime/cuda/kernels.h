// The CUDA backend's kernels (llm.c's layout: one file per op family, each a set of
// kernels and launchers with the CPU kernel's signature plus a stream). Every launcher
// computes what the CPU kernel of the same name in runtime/cpu/ computes, with the same
// assign/accumulate rules and the same aliasing allowed; the comments there are the
// contract. Pointers are device memory. Launchers only enqueue: the caller checks for
// launch errors (ErrorLog::launched).
//
// Determinism: no kernel uses floating-point atomics. Sums over rows (parameter
// gradients: column_sums.cuh; embedding gradients: embedding.cu) add in an order fixed by
// the sizes alone, so a run repeats its bits.
//
// Scratch: the launchers whose sums go through partial sums take `scratch`, device memory
// of the size their *_scratch function gives (floats, or bytes where it says so).
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "runtime/op_types.h"

namespace scion::runtime::cuda {

// embedding.cu
void embedding_forward(float* out, const std::int32_t* inp, const float* wte, const float* wpe,
                       const float* prompt, int B, int T, int P, int C, cudaStream_t stream);
// Bytes of scratch embedding_backward needs. It returns the failure of its token sort
// (CUB's, which reports instead of setting the launch error), or cudaErrorInvalidValue for
// too little scratch; launch errors are the caller's to check, as everywhere.
std::size_t embedding_backward_scratch_bytes(int B, int T);
cudaError_t embedding_backward(float* dwte, float* dwpe, float* dprompt, const float* dout,
                               const std::int32_t* inp, int B, int T, int P, int C, void* scratch,
                               std::size_t scratch_bytes, cudaStream_t stream);

// norms.cu
void layernorm_forward(float* out, float* mean, float* rstd, const float* inp,
                       const float* weight, const float* bias, std::int64_t N, int C, float eps,
                       cudaStream_t stream);
// Floats of scratch layernorm_backward and rmsnorm_backward need.
std::int64_t norm_backward_scratch(std::int64_t N, int C);
void layernorm_backward(float* dinp, float* dweight, float* dbias, const float* dout,
                        const float* inp, const float* weight, const float* mean, const float* rstd,
                        std::int64_t N, int C, GradMode mode, float* scratch, cudaStream_t stream);
void rmsnorm_forward(float* out, float* rstd, const float* inp, const float* weight,
                     std::int64_t N, int C, float eps, cudaStream_t stream);
void rmsnorm_backward(float* dinp, float* dweight, const float* dout, const float* inp,
                      const float* weight, const float* rstd, std::int64_t N, int C, GradMode mode,
                      float* scratch, cudaStream_t stream);

// matmul_support.cu: the non-product parts of the linear layers.
// out (N, OC) = bias broadcast over rows.
void fill_rows(float* out, const float* bias, std::int64_t N, int OC, cudaStream_t stream);
// dbias (OC) += column sums of dout (N, OC); bias_backward_scratch(N, OC) floats of scratch.
std::int64_t bias_backward_scratch(std::int64_t N, int OC);
void bias_backward(float* dbias, const float* dout, std::int64_t N, int OC, float* scratch,
                   cudaStream_t stream);
// dst (n) = src rounded to bf16 bits (round to nearest even, as runtime/tensor.h).
void round_to_bf16(std::uint16_t* dst, const float* src, std::int64_t n, cudaStream_t stream);

// attention_softmax.cu: the row-wise parts of attention; the products are cuBLAS's.
// probs (B, NH, T, S = P + T) holds scaled scores; masks (as cpu/attention.h) and
// normalises every row in place.
void attention_softmax(float* probs, const std::int32_t* lengths, int B, int NH, int T, int P,
                       bool causal, int window, cudaStream_t stream);
// ds holds dP (same layout as probs); becomes dS = P ⊙ (dP − Σ_j P dP) · scale.
void attention_softmax_backward(float* ds, const float* probs, std::int64_t rows, int S,
                                float scale, cudaStream_t stream);

// elementwise.cu
void gelu_forward(float* out, const float* inp, std::int64_t N, cudaStream_t stream);
void gelu_backward(float* dinp, const float* inp, const float* dout, std::int64_t N,
                   cudaStream_t stream);
void gelu_erf_forward(float* out, const float* inp, std::int64_t N, cudaStream_t stream);
void gelu_erf_backward(float* dinp, const float* inp, const float* dout, std::int64_t N,
                       cudaStream_t stream);
void tanh_forward(float* out, const float* inp, std::int64_t N, cudaStream_t stream);
void tanh_backward(float* dinp, const float* out, const float* dout, std::int64_t N,
                   cudaStream_t stream);
void swiglu_forward(float* out, const float* gate, const float* up, std::int64_t N,
                    cudaStream_t stream);
void swiglu_backward(float* dgate, float* dup, const float* dout, const float* gate,
                     const float* up, std::int64_t N, cudaStream_t stream);
void residual_forward(float* out, const float* inp1, const float* inp2, std::int64_t N,
                      cudaStream_t stream);
void add_inplace(float* dst, const float* src, float scale, std::int64_t N, cudaStream_t stream);
void scale_inplace(float* x, float scale, std::int64_t N, cudaStream_t stream);
// The squared norm in double, summed in a fixed order: per-block partial sums into
// `partials` (kNormBlocks doubles of device memory), then one block adds those into
// *result (device memory).
inline constexpr int kNormBlocks = 256;
void squared_norm(double* result, double* partials, const float* x, std::int64_t N,
                  cudaStream_t stream);
// x *= max_norm / (norm + kClipEpsilon) when norm = global_norm(squared_norms, count)
// (runtime/op_types.h, computed on the device from device memory) exceeds max_norm.
void clip_to_global_norm(float* x, std::int64_t N, const double* squared_norms, int count,
                         float max_norm, cudaStream_t stream);

// column_scale.cu (runtime/cpu/column_scale.h). scale_columns_backward's dscale sums need
// scale_columns_backward_scratch(N, C) floats of device memory in `scratch`.
std::int64_t scale_columns_backward_scratch(std::int64_t N, int C);
void scale_columns(float* out, const float* inp, const float* scale, const float* divisor,
                   std::int64_t N, int C, bool accumulate, cudaStream_t stream);
void scale_columns_backward(float* dinp, float* dscale, const float* dout, const float* inp,
                            const float* scale, const float* divisor, std::int64_t N, int C,
                            float* scratch, cudaStream_t stream);
void row_norms(float* out, const float* x, std::int64_t N, int C, cudaStream_t stream);

// dropout.cu
void dropout_forward(float* out, float* mask, const float* inp, std::int64_t N, float p,
                     std::uint64_t seed, std::uint64_t stream_id, std::uint64_t first,
                     cudaStream_t stream);
void dropout_backward(float* dinp, const float* dout, const float* mask, std::int64_t N,
                      cudaStream_t stream);

// cross_entropy.cu. *counted (device memory) is set to the number of rows whose target
// is not kIgnoreIndex. Returns the failure of zeroing *counted (cudaMemsetAsync), if any;
// the kernel's launch error is the caller's to check, as everywhere.
cudaError_t cross_entropy_forward(float* losses, float* probs, unsigned long long* counted,
                                  const float* logits, const std::int32_t* targets, std::int64_t N,
                                  int V, cudaStream_t stream);
void cross_entropy_backward(float* dlogits, const float* probs, const std::int32_t* targets,
                            float scale, std::int64_t N, int V, cudaStream_t stream);
void cross_entropy_backward_weighted(float* dlogits, const float* probs,
                                     const std::int32_t* targets, const float* weights, float scale,
                                     std::int64_t N, int V, cudaStream_t stream);
void bce_with_logits_forward(float* losses, float* probs, const float* logits, const float* targets,
                             std::int64_t N, int K, cudaStream_t stream);
void bce_with_logits_backward(float* dlogits, const float* probs, const float* targets, float scale,
                              std::int64_t N, int K, cudaStream_t stream);

// pooling.cu
void pool_forward(float* out, const float* inp, const std::int32_t* lengths, int B, int S,
                  int offset, int C, PoolMode mode, cudaStream_t stream);
void pool_backward(float* dinp, const float* dout, const std::int32_t* lengths, int B, int S,
                   int offset, int C, PoolMode mode, cudaStream_t stream);

// optimizer.cu
void adamw_update(float* param, const float* grad, float* m, float* v, std::int64_t n, float lr,
                  float beta1, float beta2, float eps, float weight_decay, int step,
                  cudaStream_t stream);
void sgd_update(float* param, const float* grad, float* velocity, std::int64_t n, float lr,
                float momentum, float weight_decay, cudaStream_t stream);

// llama.cu: rotary positions and grouped key/value heads.
void rope_forward(float* out, const float* inp, int B, int T, int NH, int D, int pos0,
                  float theta, float position_scale, cudaStream_t stream);
void rope_backward(float* dinp, const float* dout, int B, int T, int NH, int D, int pos0,
                   float theta, float position_scale, cudaStream_t stream);
void repeat_kv_forward(float* out, const float* inp, std::int64_t N, int NKV, int groups, int D,
                       cudaStream_t stream);
void repeat_kv_backward(float* dinp, const float* dout, std::int64_t N, int NKV, int groups,
                        int D, cudaStream_t stream);

}  // namespace scion::runtime::cuda
