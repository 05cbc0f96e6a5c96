// The products of one (sequence, head) of attention (attention.cpp), on the calling
// thread: attention spreads (sequence, head) pairs over the OpenMP team, so every call
// here runs serially, and may run on every thread of the team at once.
//
// Three kinds, fixed when the HeadProducts is made:
// - fp32 on OpenBLAS (gemm_serial) or on oneDNN (onednn_sgemm_serial): the attention class
//   of matmul_choice.h, or the library a backend was told to use. Operands are read in
//   place, strided as they lie in the (B, T, C) activations.
// - bf16: both operands of every product rounded to bf16 (round to nearest even) and
//   multiplied with fp32 accumulation into fp32 outputs, as the linear layers of a bf16
//   backend (bf16_matmul.h) and PyTorch's CPU autocast do. The rounding is fused into
//   packing: operand() copies the head's rows into dense scratch of the calling thread
//   (held for the thread's life, grown as needed: nothing is allocated per step) as bf16
//   bits, which oneDNN's bf16 kernels (AVX-512 BF16, AMX) read. Where oneDNN has no bf16
//   kernel (below AVX-512) the scratch holds the rounded values as floats and the fp32
//   library multiplies them: the same values (a product of two bf16 numbers is exact in
//   fp32), at fp32 speed.
//
// Usage (one head's scores, S = P + T columns of `scores`):
//   const HeadOperand qh = products.operand(kSlotQ, q + head, T, hs, C);
//   const HeadOperand kh = products.operand(kSlotK, k + head, T, hs, C);
//   products.gemm(false, true, T, T, hs, scale, qh, kh, 0.0f, scores + P, S);
// An operand stays valid until its slot is packed again by the same thread.
#pragma once

#include <cstdint>

#include "runtime/backend.h"

namespace scion::runtime::cpu {

// A (rows, cols) operand with row stride ld: fp32 values, bf16 bits, or bf16-rounded
// floats, as the HeadProducts that made it works.
struct HeadOperand {
  const void* data = nullptr;
  std::int64_t ld = 0;
};

class HeadProducts {
 public:
  // bf16 when precision is kBF16; otherwise fp32 on `fp32_library` (kAuto: the machine's
  // choice for attention products).
  HeadProducts(Precision precision, MatmulLibrary fp32_library);

  bool bf16() const { return kind_ != Kind::kOpenBlasF32 && kind_ != Kind::kOnednnF32; }
  // The library that multiplies, for reports: "openblas fp32", "onednn fp32", "onednn bf16"
  // or "bf16 rounded, onednn fp32" / "bf16 rounded, openblas fp32".
  const char* describe() const;

  // Rows [0, rows) x columns [0, cols) of src (row stride ld) as an operand; bf16 packs
  // them into the calling thread's scratch `slot` (0 <= slot < kSlots).
  static constexpr int kSlots = 8;
  HeadOperand operand(int slot, const float* src, std::int64_t rows, std::int64_t cols,
                      std::int64_t ld) const;

  // The operand from column `columns` of `x` on (x's element type decides the bytes).
  HeadOperand columns_from(HeadOperand x, std::int64_t columns) const;

  // c (M, N; ldc, fp32) = alpha · op(a) · op(b) + beta · c, op = transpose when trans_*.
  // REQUIRES: a and b from operand() of this object; beta is 0 or 1.
  void gemm(bool trans_a, bool trans_b, std::int64_t M, std::int64_t N, std::int64_t K, float alpha,
            HeadOperand a, HeadOperand b, float beta, float* c, std::int64_t ldc) const;

 private:
  enum class Kind { kOpenBlasF32, kOnednnF32, kOnednnBf16, kRoundedOpenBlas, kRoundedOnednn };
  Kind kind_;
};

}  // namespace scion::runtime::cpu
