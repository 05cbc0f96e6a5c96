#include "runtime/cpu/bf16_matmul.h"

#include <vector>

#include "runtime/cpu/bf16_round.h"
#include "runtime/cpu/matmul.h"
#include "runtime/cpu/matmul_choice.h"
#include "runtime/cpu/onednn_gemm.h"
#include "runtime/cpu/parallel.h"

namespace scion::runtime::cpu {
namespace {

// Whether oneDNN multiplies bf16 here (AVX-512 and up). Without it, operands are rounded
// to bf16 values held as floats and multiplied by the fp32 product this machine chose
// (matmul_choice.h): the same values, one scratch copy each instead of a bf16 copy plus
// a widened one.
bool onednn_has_bf16() {
  static const bool has = onednn_info().bf16_kernel;
  return has;
}

// Scratch for one operand, reused across calls (training repeats the same shapes).
struct OperandScratch {
  std::vector<std::uint16_t> bits;
  std::vector<float> values;
  // The operand rounded to bf16: as bits for oneDNN, or as floats for the fp32 product.
  const void* round(const float* src, std::int64_t n) {
    const auto size = static_cast<std::size_t>(n);
    if (onednn_has_bf16()) {
      if (bits.size() < size) bits.resize(size);
      round_to_bf16(bits.data(), src, n);
      return bits.data();
    }
    if (values.size() < size) values.resize(size);
    round_to_bf16_values(values.data(), src, n);
    return values.data();
  }
  // A weight already held in bf16: its bits for oneDNN, or widened to floats.
  const void* widen(const std::uint16_t* src, std::int64_t n) {
    if (onednn_has_bf16()) return src;
    const auto size = static_cast<std::size_t>(n);
    if (values.size() < size) values.resize(size);
    widen_bf16(values.data(), src, n);
    return values.data();
  }
};

thread_local OperandScratch scratch_inp, scratch_weight, scratch_dout;

// c = alpha · op(a) · op(b) + beta · c on operands OperandScratch::round returned.
void product(bool trans_a, bool trans_b, std::int64_t M, std::int64_t N, std::int64_t K,
             float alpha, const void* a, std::int64_t lda, const void* b, std::int64_t ldb,
             float beta, float* c, std::int64_t ldc) {
  if (onednn_has_bf16())
    onednn_gemm(GemmInput::kBF16, trans_a, trans_b, M, N, K, alpha, a, lda, b, ldb, beta, c, ldc);
  else
    gemm_chosen(trans_a, trans_b, M, N, K, alpha, static_cast<const float*>(a), lda,
                static_cast<const float*>(b), ldb, beta, c, ldc);
}

}  // namespace

void matmul_forward_bf16(float* out, const float* inp, const float* weight, const float* bias,
                         std::int64_t N, int C, int OC) {
  if (N == 0) return;
  if (bias) {
#pragma omp parallel for schedule(static) if (worth_parallel(N * OC))
    for (std::int64_t n = 0; n < N; ++n)
      for (int o = 0; o < OC; ++o) out[n * OC + o] = bias[o];
  }
  const void* a = scratch_inp.round(inp, N * C);
  const void* w = scratch_weight.round(weight, std::int64_t{OC} * C);
  product(false, true, N, OC, C, 1.0f, a, C, w, C, bias ? 1.0f : 0.0f, out, OC);
}

void matmul_forward_bf16_weight(float* out, const float* inp, const std::uint16_t* weight,
                                const float* bias, std::int64_t N, int C, int OC) {
  if (N == 0) return;
  if (bias) {
#pragma omp parallel for schedule(static) if (worth_parallel(N * OC))
    for (std::int64_t n = 0; n < N; ++n)
      for (int o = 0; o < OC; ++o) out[n * OC + o] = bias[o];
  }
  const void* a = scratch_inp.round(inp, N * C);
  const void* w = scratch_weight.widen(weight, std::int64_t{OC} * C);
  product(false, true, N, OC, C, 1.0f, a, C, w, C, bias ? 1.0f : 0.0f, out, OC);
}

void matmul_backward_bf16_weight(float* dinp, float* dbias, const float* dout,
                                 const std::uint16_t* weight, float scale, std::int64_t N, int C,
                                 int OC, GradMode mode) {
  if (N == 0) return;
  if (dinp) {  // dinp (N, C) = scale · dout (N, OC) · weight (OC, C)
    const void* d = scratch_dout.round(dout, N * OC);
    const void* w = scratch_weight.widen(weight, std::int64_t{OC} * C);
    product(false, false, N, C, OC, scale, d, OC, w, C,
            mode == GradMode::kAccumulate ? 1.0f : 0.0f, dinp, C);
  }
  if (dbias) bias_backward(dbias, dout, N, OC);
}

void matmul_forward_accumulate_bf16(float* out, const float* inp, const float* weight,
                                    float scale, std::int64_t N, int C, int OC) {
  if (N == 0) return;
  const void* a = scratch_inp.round(inp, N * C);
  const void* w = scratch_weight.round(weight, std::int64_t{OC} * C);
  product(false, true, N, OC, C, scale, a, C, w, C, 1.0f, out, OC);
}

void matmul_backward_bf16(float* dinp, float* dweight, float* dbias, const float* dout,
                          const float* inp, const float* weight, float scale, std::int64_t N,
                          int C, int OC, GradMode mode) {
  if (N == 0) return;
  const void* d = scratch_dout.round(dout, N * OC);
  if (dinp) {  // dinp (N, C) = scale · dout (N, OC) · weight (OC, C)
    const void* w = scratch_weight.round(weight, std::int64_t{OC} * C);
    product(false, false, N, C, OC, scale, d, OC, w, C,
            mode == GradMode::kAccumulate ? 1.0f : 0.0f, dinp, C);
  }
  if (dweight) {  // dweight (OC, C) += scale · dout^T (OC, N) · inp (N, C)
    const void* a = scratch_inp.round(inp, N * C);
    product(true, false, OC, C, N, scale, d, OC, a, C, 1.0f, dweight, C);
  }
  if (dbias) bias_backward(dbias, dout, N, OC);  // fp32, as in the fp32 layer
}

}  // namespace scion::runtime::cpu
