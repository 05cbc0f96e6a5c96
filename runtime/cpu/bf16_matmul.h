// Linear layers in bf16: the contract of matmul.h (same signatures, same accumulation
// rules), with both operands of every product rounded to bf16 (round to nearest even)
// and the products accumulated in fp32 into fp32 outputs — the mixed precision of
// PyTorch's CPU autocast. Biases, bias gradients and every output stay fp32.
//
// The products run on oneDNN's bf16 kernels where it has them (AVX-512 and up); elsewhere
// the rounded operands are held as floats and multiplied in fp32 by the library the
// machine chose for the product's class (matmul_choice.h), which gives the same values
// (products of bf16 numbers are exact in fp32), slower than plain fp32.
// Operands are rounded on the fly into scratch owned by the calling thread: activations,
// gradients and weights alike (a trained weight's fp32 master changes every step; a
// frozen weight held in fp32 is rounded again at each call, which costs O(out·in)
// against the product's O(N·out·in)). Scratch: one copy of the product's input rows, of
// its output gradient rows and of its weight, at 2 bytes an element (oneDNN) or 4 (fp32
// fallback); `scion plan` counts it.
//
// The *_bf16_weight forms take a weight already held in bf16 (a frozen trunk weight in a
// bf16 training group, runtime/model/parameter_binding.h: 2 bytes a parameter, converted once
// when loaded): oneDNN reads its bits directly; the fp32 fallback widens it into the
// weight scratch. A frozen weight has no gradient, so their backward gives the input's
// gradient (and the bias's, which BitFit may train) only.
#pragma once

#include <cstdint>

#include "runtime/cpu/bf16_round.h"
#include "runtime/op_types.h"

namespace scion::runtime::cpu {

void matmul_forward_bf16(float* out, const float* inp, const float* weight, const float* bias,
                         std::int64_t N, int C, int OC);

void matmul_forward_accumulate_bf16(float* out, const float* inp, const float* weight,
                                    float scale, std::int64_t N, int C, int OC);

void matmul_backward_bf16(float* dinp, float* dweight, float* dbias, const float* dout,
                          const float* inp, const float* weight, float scale, std::int64_t N,
                          int C, int OC, GradMode mode);

void matmul_forward_bf16_weight(float* out, const float* inp, const std::uint16_t* weight,
                                const float* bias, std::int64_t N, int C, int OC);

// dinp (N, C) = / += scale · dout · weight per `mode`; dbias += column sums of dout.
// Either may be null.
void matmul_backward_bf16_weight(float* dinp, float* dbias, const float* dout,
                                 const std::uint16_t* weight, float scale, std::int64_t N, int C,
                                 int OC, GradMode mode);

}  // namespace scion::runtime::cpu
