#include "runtime/cpu/head_products.h"

#include <cstddef>
#include <vector>

#include "runtime/cpu/bf16_round.h"
#include "runtime/cpu/gemm.h"
#include "runtime/cpu/matmul_choice.h"
#include "runtime/cpu/onednn_gemm.h"

namespace scion::runtime::cpu {
namespace {

// The calling thread's packed operands, one buffer per slot, kept across calls.
struct HeadScratch {
  std::vector<std::uint16_t> bits[HeadProducts::kSlots];
  std::vector<float> values[HeadProducts::kSlots];
};
thread_local HeadScratch scratch;

template <class T>
T* reserve(std::vector<T>& buffer, std::int64_t n) {
  if (buffer.size() < static_cast<std::size_t>(n)) buffer.resize(static_cast<std::size_t>(n));
  return buffer.data();
}

MatmulLibrary resolve(MatmulLibrary library) {
  return library == MatmulLibrary::kAuto ? fp32_matmul_choice().library(ProductClass::kAttention)
                                         : library;
}

}  // namespace

HeadProducts::HeadProducts(Precision precision, MatmulLibrary fp32_library) {
  const bool onednn = resolve(fp32_library) == MatmulLibrary::kOnednn;
  if (precision != Precision::kBF16)
    kind_ = onednn ? Kind::kOnednnF32 : Kind::kOpenBlasF32;
  else if (onednn_info().bf16_kernel)
    kind_ = Kind::kOnednnBf16;
  else
    kind_ = onednn ? Kind::kRoundedOnednn : Kind::kRoundedOpenBlas;
}

const char* HeadProducts::describe() const {
  switch (kind_) {
    case Kind::kOpenBlasF32:
      return "openblas fp32";
    case Kind::kOnednnF32:
      return "onednn fp32";
    case Kind::kOnednnBf16:
      return "onednn bf16";
    case Kind::kRoundedOpenBlas:
      return "bf16 rounded, openblas fp32";
    case Kind::kRoundedOnednn:
      return "bf16 rounded, onednn fp32";
  }
  return "?";
}

HeadOperand HeadProducts::operand(int slot, const float* src, std::int64_t rows, std::int64_t cols,
                                  std::int64_t ld) const {
  if (!bf16()) return {src, ld};
  if (kind_ == Kind::kOnednnBf16) {
    std::uint16_t* packed = reserve(scratch.bits[slot], rows * cols);
    for (std::int64_t r = 0; r < rows; ++r)
      round_to_bf16_range(packed + r * cols, src + r * ld, cols);
    return {packed, cols};
  }
  float* packed = reserve(scratch.values[slot], rows * cols);
  for (std::int64_t r = 0; r < rows; ++r)
    round_to_bf16_values_range(packed + r * cols, src + r * ld, cols);
  return {packed, cols};
}

HeadOperand HeadProducts::columns_from(HeadOperand x, std::int64_t columns) const {
  const std::size_t element = kind_ == Kind::kOnednnBf16 ? sizeof(std::uint16_t) : sizeof(float);
  return {static_cast<const char*>(x.data) + columns * element, x.ld};
}

void HeadProducts::gemm(bool trans_a, bool trans_b, std::int64_t M, std::int64_t N, std::int64_t K,
                        float alpha, HeadOperand a, HeadOperand b, float beta, float* c,
                        std::int64_t ldc) const {
  const auto* af = static_cast<const float*>(a.data);
  const auto* bf = static_cast<const float*>(b.data);
  switch (kind_) {
    case Kind::kOpenBlasF32:
    case Kind::kRoundedOpenBlas:
      gemm_serial(trans_a, trans_b, M, N, K, alpha, af, a.ld, bf, b.ld, beta, c, ldc);
      return;
    case Kind::kOnednnF32:
    case Kind::kRoundedOnednn:
      onednn_sgemm_serial(trans_a, trans_b, M, N, K, alpha, af, a.ld, bf, b.ld, beta, c, ldc);
      return;
    case Kind::kOnednnBf16: {
      const auto* a16 = static_cast<const std::uint16_t*>(a.data);
      const auto* b16 = static_cast<const std::uint16_t*>(b.data);
      if (serial_gemm_bf16(trans_a, trans_b, M, N, K, alpha, a16, a.ld, b16, b.ld, beta, c, ldc))
        return;
      // No bf16 kernel for this one product (bf16_kernel held for the probe's shape): the
      // same values widened, multiplied in fp32. Packed operands are dense (ld = columns).
      const std::int64_t a_size = (trans_a ? K : M) * a.ld, b_size = (trans_b ? N : K) * b.ld;
      float* a32 = reserve(scratch.values[0], a_size);
      float* b32 = reserve(scratch.values[1], b_size);
      widen_bf16_range(a32, a16, a_size);
      widen_bf16_range(b32, b16, b_size);
      onednn_sgemm_serial(trans_a, trans_b, M, N, K, alpha, a32, a.ld, b32, b.ld, beta, c, ldc);
      return;
    }
  }
}

}  // namespace scion::runtime::cpu
