// Row-major products on cuBLAS: attention's strided-batched ones
// (cublasGemmStridedBatchedEx), and single products (cublasGemmEx), which the linear
// layers fall back to when cuBLASLt offers no algorithm for a shape (lt_matmul.h).
//
// The linear layers multiply on cuBLASLt (lt_matmul.h); attention stays here because its
// products are batched over the sequences with a batch stride of 0 for the prefix keys
// and values that a segment's sequences share. cublasGemmStridedBatchedEx takes any
// stride; cuBLASLt documents its batch offset only as non-negative and its layouts as
// non-overlapping, so a zero stride there would rest on undocumented behaviour.
//
// cuBLAS is column-major. A row-major (rows, cols) matrix with leading dimension ld is the
// column-major (cols, rows) matrix with the same ld, so the row-major C = op(A) op(B) is
// the column-major Cᵀ = op(B)ᵀ op(A)ᵀ: the same call with A and B swapped and M and N
// swapped, transposition flags unchanged.
//
// Operands are fp32 or bf16 (Operands); the output and the accumulation are always fp32
// (CUBLAS_COMPUTE_32F). fp32 operands are multiplied in full fp32 (no TF32) unless the
// backend was made with TF32 allowed (CUBLAS_COMPUTE_32F_FAST_TF32: 10-bit mantissas in the
// products, about 1e-3 relative, so opt-in only). Failures are recorded in the ErrorLog.
#pragma once

#include <cublas_v2.h>

#include <cstdint>

#include "runtime/cuda/error_log.h"

namespace scion::runtime::cuda {

enum class Operands { kF32, kBF16 };

class Gemm {
 public:
  Gemm(ErrorLog& log, bool allow_tf32);
  ~Gemm();
  Gemm(const Gemm&) = delete;
  Gemm& operator=(const Gemm&) = delete;

  bool ready() const { return handle_ != nullptr; }

  // One product c (M, N; ldc) = alpha · op(a) (M, K; lda) · op(b) (K, N; ldb) + beta · c.
  void run(bool trans_a, bool trans_b, std::int64_t M, std::int64_t N, std::int64_t K, float alpha,
           const void* a, std::int64_t lda, const void* b, std::int64_t ldb, float beta, float* c,
           std::int64_t ldc, Operands type);

  // `batch` products c (M, N; ldc) = alpha · op(a) · op(b) + beta · c, op = transpose
  // when trans_*, the i-th on a + i·stride_a, b + i·stride_b, c + i·stride_c
  // (elements). A stride of 0 shares one operand across the batch (prefix keys).
  void run_batched(bool trans_a, bool trans_b, std::int64_t M, std::int64_t N, std::int64_t K,
                   float alpha, const void* a, std::int64_t lda, std::int64_t stride_a,
                   const void* b, std::int64_t ldb, std::int64_t stride_b, float beta, float* c,
                   std::int64_t ldc, std::int64_t stride_c, std::int64_t batch, Operands type);

 private:
  cublasComputeType_t compute_type(Operands type) const;

  ErrorLog& log_;
  bool allow_tf32_;
  cublasHandle_t handle_ = nullptr;
};

}  // namespace scion::runtime::cuda
