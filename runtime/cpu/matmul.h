// Linear layers in fp32: out (N, OC) = inp (N, C) · weight (OC, C)^T + bias (OC).
//
// Weights are (out, in) as in PyTorch. matmul_forward assigns its output;
// matmul_forward_accumulate adds scale · inp · weight^T to an existing output (the
// low-rank branch of LoRA, a bottleneck adapter's contribution to the residual).
// Backward: dweight, dbias accumulate (+=) and may be null (frozen); dinp follows `mode`
// (see GradMode in runtime/op_types.h) and may be null when nothing upstream needs it.
//
// Threads: BLAS is always called from outside OpenMP regions, so OpenBLAS may use every
// core while our OpenMP loops are idle; the two pools never run at the same time (see
// runtime/cpu/threading.h for how their sizes are set).
#pragma once

#include <cstdint>

#include "runtime/cpu/gemm.h"
#include "runtime/op_types.h"

namespace scion::runtime::cpu {

// The products run on `gemm_fn`: cpu::gemm (OpenBLAS, the reference) or
// cpu::gemm_onednn_f32 (oneDNN).

void matmul_forward(float* out, const float* inp, const float* weight, const float* bias,
                    std::int64_t N, int C, int OC, GemmFn gemm_fn = gemm);

void matmul_forward_accumulate(float* out, const float* inp, const float* weight, float scale,
                               std::int64_t N, int C, int OC, GemmFn gemm_fn = gemm);

// Gradients of out = scale · inp · weight^T (+ bias). `scale` is 1 for plain layers.
void matmul_backward(float* dinp, float* dweight, float* dbias, const float* dout,
                     const float* inp, const float* weight, float scale, std::int64_t N, int C,
                     int OC, GradMode mode, GemmFn gemm_fn = gemm);

// dbias (OC) += the column sums of dout (N, OC), in blocks of 64 outputs per thread: rows
// are read contiguously and each sum keeps one order whatever the thread count. Shared by
// the fp32 and bf16 linear layers (biases stay fp32 in both).
void bias_backward(float* dbias, const float* dout, std::int64_t N, int OC);

}  // namespace scion::runtime::cpu
