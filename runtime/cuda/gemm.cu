#include "runtime/cuda/gemm.h"

#include <limits>
#include <string>

namespace scion::runtime::cuda {
namespace {

bool fits_int(std::int64_t v) { return v >= 0 && v <= std::numeric_limits<int>::max(); }

}  // namespace

Gemm::Gemm(ErrorLog& log, bool allow_tf32) : log_(log), allow_tf32_(allow_tf32) {
  cublasHandle_t handle = nullptr;
  const cublasStatus_t status = cublasCreate(&handle);
  log_.check(status, "cublasCreate");
  if (status != CUBLAS_STATUS_SUCCESS) return;
  handle_ = handle;
  // The legacy default stream, which every kernel of the backend runs on too.
  log_.check(cublasSetStream(handle_, nullptr), "cublasSetStream");
  // Default math: the compute type alone decides the arithmetic. CUBLAS_COMPUTE_32F on
  // fp32 operands never uses TF32; on bf16 operands it runs on tensor cores with fp32
  // accumulation. (Pedantic math would also keep bf16 off the tensor cores.)
  log_.check(cublasSetMathMode(handle_, CUBLAS_DEFAULT_MATH), "cublasSetMathMode");
}

Gemm::~Gemm() {
  if (handle_ != nullptr) cublasDestroy(handle_);
}

cublasComputeType_t Gemm::compute_type(Operands type) const {
  return type == Operands::kF32 && allow_tf32_ ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
}

void Gemm::run(bool trans_a, bool trans_b, std::int64_t M, std::int64_t N, std::int64_t K,
               float alpha, const void* a, std::int64_t lda, const void* b, std::int64_t ldb,
               float beta, float* c, std::int64_t ldc, Operands type) {
  if (M == 0 || N == 0) return;
  if (handle_ == nullptr) {
    log_.fail("a product was asked of a CUDA backend without a cuBLAS handle");
    return;
  }
  if (!fits_int(M) || !fits_int(N) || !fits_int(K) || !fits_int(lda) || !fits_int(ldb) ||
      !fits_int(ldc)) {
    log_.fail("a product of " + std::to_string(M) + " x " + std::to_string(N) + " x " +
              std::to_string(K) + " is beyond cuBLAS's 32-bit sizes; split the batch");
    return;
  }
  const cudaDataType_t operand = type == Operands::kBF16 ? CUDA_R_16BF : CUDA_R_32F;
  // Column-major: Cᵀ (N, M) = op(B)ᵀ (N, K) · op(A)ᵀ (K, M); see gemm.h.
  const cublasStatus_t status = cublasGemmEx(
      handle_, trans_b ? CUBLAS_OP_T : CUBLAS_OP_N, trans_a ? CUBLAS_OP_T : CUBLAS_OP_N,
      static_cast<int>(N), static_cast<int>(M), static_cast<int>(K), &alpha, b, operand,
      static_cast<int>(ldb), a, operand, static_cast<int>(lda), &beta, c, CUDA_R_32F,
      static_cast<int>(ldc), compute_type(type), CUBLAS_GEMM_DEFAULT);
  log_.check(status, "cublasGemmEx");
}

void Gemm::run_batched(bool trans_a, bool trans_b, std::int64_t M, std::int64_t N,
                       std::int64_t K, float alpha, const void* a, std::int64_t lda,
                       std::int64_t stride_a, const void* b, std::int64_t ldb,
                       std::int64_t stride_b, float beta, float* c, std::int64_t ldc,
                       std::int64_t stride_c, std::int64_t batch, Operands type) {
  if (M == 0 || N == 0 || batch == 0) return;
  if (handle_ == nullptr) {
    log_.fail("a product was asked of a CUDA backend without a cuBLAS handle");
    return;
  }
  if (!fits_int(M) || !fits_int(N) || !fits_int(K) || !fits_int(lda) || !fits_int(ldb) ||
      !fits_int(ldc) || !fits_int(batch)) {
    log_.fail("a product of " + std::to_string(M) + " x " + std::to_string(N) + " x " +
              std::to_string(K) + " is beyond cuBLAS's 32-bit sizes; split the batch");
    return;
  }
  const cudaDataType_t operand = type == Operands::kBF16 ? CUDA_R_16BF : CUDA_R_32F;
  const cublasComputeType_t compute = compute_type(type);
  // Column-major: Cᵀ (N, M) = op(B)ᵀ (N, K) · op(A)ᵀ (K, M); see gemm.h.
  const cublasOperation_t op_b = trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t op_a = trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasStatus_t status = cublasGemmStridedBatchedEx(
      handle_, op_b, op_a, static_cast<int>(N), static_cast<int>(M), static_cast<int>(K), &alpha,
      b, operand, static_cast<int>(ldb), stride_b, a, operand, static_cast<int>(lda), stride_a,
      &beta, c, CUDA_R_32F, static_cast<int>(ldc), stride_c, static_cast<int>(batch), compute,
      CUBLAS_GEMM_DEFAULT);
  log_.check(status, "cublasGemmStridedBatchedEx");
}

}  // namespace scion::runtime::cuda
