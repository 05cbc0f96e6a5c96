// oneDNN products (fp32 and bf16) against the OpenBLAS fp32 reference, at shapes below
// and above the parallel thresholds (runtime/cpu/parallel.h: 2^15 elements; gemm.cpp:
// 2^18 multiply-adds), with and without transposes. The linear layers built on them (the
// Backend's matmul_* operations in fp32 on oneDNN and in bf16) are compared with the
// OpenBLAS layers by the backend op harness (tests/backend/, backend_ops_cpu_onednn and
// backend_ops_cpu_bf16).
//
// Tolerances, as normalised errors ‖x − ref‖ / ‖ref‖:
// - oneDNN fp32 against OpenBLAS fp32: 1e-5. Both accumulate in fp32, in different
//   orders; K ≤ 1024 terms of random sign keep the difference near 1e-7·sqrt(K).
// - bf16 against fp32 of the unrounded operands: 5e-3. Rounding an operand to bf16
//   (8 significant bits) changes it by at most 2^-9 relative; a product of two rounded
//   values by at most about 2^-8; with independent signs the sums keep that relative
//   size (about 2e-3). The test also requires the error to exceed 1e-5, so a bf16 path
//   that silently computed in fp32 fails.
// - bf16 against fp32 of the bf16-rounded operands: 1e-5, the fp32 accumulation
//   tolerance: products of bf16 values are exact in fp32, so only the summation order
//   differs.
#include <catch2/catch.hpp>

#include <cmath>
#include <vector>

#include "runtime/cpu/bf16_matmul.h"
#include "runtime/cpu/gemm.h"
#include "runtime/cpu/onednn_gemm.h"
#include "runtime/tensor.h"
#include "runtime_gradcheck.h"

using namespace scion::runtime;
using namespace scion::runtime::cpu;
using scion::test::random_vector;

namespace {

constexpr double kFp32Tolerance = 1e-5;
constexpr double kBf16Tolerance = 5e-3;

double normalised_error(const std::vector<float>& x, const std::vector<float>& ref) {
  double diff = 0, norm = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    diff += (double(x[i]) - ref[i]) * (double(x[i]) - ref[i]);
    norm += double(ref[i]) * ref[i];
  }
  return std::sqrt(diff / norm);
}

std::vector<std::uint16_t> to_bf16(const std::vector<float>& x) {
  std::vector<std::uint16_t> bits(x.size());
  round_to_bf16(bits.data(), x.data(), static_cast<std::int64_t>(x.size()));
  return bits;
}

std::vector<float> rounded(const std::vector<float>& x) {
  std::vector<float> r(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) r[i] = bf16_to_float(float_to_bf16(x[i]));
  return r;
}

struct Shape {
  std::int64_t M, N, K;
};
// Small; odd (ragged tiles); above every parallel threshold; a W1-like (rows, 256, 256);
// a tall-skinny LoRA product (rank 8).
const Shape kShapes[] = {{3, 5, 7}, {37, 65, 129}, {256, 384, 512}, {1024, 256, 256}, {512, 8, 256}};

}  // namespace

TEST_CASE("oneDNN fp32 and bf16 products match the OpenBLAS reference") {
  for (const Shape& s : kShapes) {
    for (const bool trans_a : {false, true}) {
      for (const bool trans_b : {false, true}) {
        for (const float beta : {0.0f, 1.0f}) {
          CAPTURE(s.M, s.N, s.K, trans_a, trans_b, beta);
          const auto a = random_vector(s.M * s.K, 1), b = random_vector(s.K * s.N, 2);
          const auto c0 = random_vector(s.M * s.N, 3);
          const std::int64_t lda = trans_a ? s.M : s.K, ldb = trans_b ? s.K : s.N;
          const float alpha = 0.75f;
          auto reference = c0;
          gemm(trans_a, trans_b, s.M, s.N, s.K, alpha, a.data(), lda, b.data(), ldb, beta,
               reference.data(), s.N);

          auto fp32 = c0;
          onednn_gemm(GemmInput::kF32, trans_a, trans_b, s.M, s.N, s.K, alpha, a.data(), lda,
                      b.data(), ldb, beta, fp32.data(), s.N);
          CHECK(normalised_error(fp32, reference) < kFp32Tolerance);

          const auto a16 = to_bf16(a), b16 = to_bf16(b);
          auto bf16 = c0;
          onednn_gemm(GemmInput::kBF16, trans_a, trans_b, s.M, s.N, s.K, alpha, a16.data(), lda,
                      b16.data(), ldb, beta, bf16.data(), s.N);
          const double bf16_error = normalised_error(bf16, reference);
          CHECK(bf16_error < kBf16Tolerance);
          CHECK(bf16_error > kFp32Tolerance);

          auto of_rounded = c0;
          gemm(trans_a, trans_b, s.M, s.N, s.K, alpha, rounded(a).data(), lda, rounded(b).data(),
               ldb, beta, of_rounded.data(), s.N);
          CHECK(normalised_error(bf16, of_rounded) < kFp32Tolerance);
        }
      }
    }
  }
}

TEST_CASE("oneDNN reports the instruction set it dispatches to") {
  const OnednnInfo info = onednn_info();
  CHECK_FALSE(info.version.empty());
  CHECK_FALSE(info.isa.empty());
  // bf16 instructions imply a bf16 kernel.
  if (info.native_bf16) CHECK(info.bf16_kernel);
}
