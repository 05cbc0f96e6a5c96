// The linear layers' products on cuBLASLt, row-major, with a workspace and a cache of
// plans (descriptors and the heuristic's algorithm) keyed by shape.
//
// Row-major to column-major as in gemm.h: the row-major C = op(A) op(B) is the
// column-major Cᵀ = op(B)ᵀ op(A)ᵀ, so every call passes B as cuBLASLt's A and A as its B,
// with M and N swapped. Operands are fp32 or bf16 (Operands); the output and the
// accumulation are always fp32 (CUBLAS_COMPUTE_32F), or CUBLAS_COMPUTE_32F_FAST_TF32 for
// fp32 operands when the backend allows TF32.
//
// Epilogues, fused into the product:
//   kBias          c (M, N) = alpha · op(a) op(b) + bias, bias (N) broadcast over the
//                  rows (cuBLASLt's CUBLASLT_EPILOGUE_BIAS: bias along the column-major
//                  D's rows, which are our columns). REQUIRES beta = 0.
//   kRowSumsOfA    also writes bias_grad (M) = Σ_k op(a)[m, k], the sums of op(a)'s
//                  rows over K (CUBLASLT_EPILOGUE_BGRADB: a is cuBLASLt's B). With
//                  op(a) = doutᵀ that is the bias gradient Σ_n dout[n, o], overwritten,
//                  not accumulated.
// A product the heuristic finds no algorithm for, on this device and these types (an
// epilogue, or a plain product of small or odd leading dimensions in bf16: LoRA ranks 4
// and 8, 2-class heads), is not an error: run() returns kNoAlgorithm without running
// anything, and the caller computes the same another way (cublasGemmEx, gemm.h; the
// epilogue's part with its own kernels). Failures (cuBLASLt errors) are recorded in the
// ErrorLog and return kFailed.
//
// The plan of a shape depends on the operands' alignments (cuBLASLt assumes 256-byte
// aligned pointers unless told otherwise, and the layers multiply row ranges of larger
// tensors), so they are part of the key. Not thread-safe, like the backend.
#pragma once

#include <cublasLt.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <map>
#include <tuple>

#include "runtime/cuda/error_log.h"
#include "runtime/cuda/gemm.h"

namespace scion::runtime::cuda {

enum class Epilogue { kNone, kBias, kRowSumsOfA };

// What run() did: issued the product; found no algorithm for it (nothing ran, nothing
// logged); or failed (logged, nothing ran).
enum class LtOutcome { kIssued, kNoAlgorithm, kFailed };

// One row-major product c (M, N; ldc) = alpha · op(a) (M, K; lda) · op(b) (K, N; ldb)
// + beta · c, op = transpose when trans_*.
struct LtProduct {
  bool trans_a = false, trans_b = false;
  std::int64_t M = 0, N = 0, K = 0, lda = 0, ldb = 0, ldc = 0;
  Operands type = Operands::kF32;
  Epilogue epilogue = Epilogue::kNone;
};

class LtMatmul {
 public:
  LtMatmul(ErrorLog& log, bool allow_tf32, cudaStream_t stream);
  ~LtMatmul();
  LtMatmul(const LtMatmul&) = delete;
  LtMatmul& operator=(const LtMatmul&) = delete;

  bool ready() const { return handle_ != nullptr && workspace_ != nullptr; }

  // Runs `p` (see above; `bias` for kBias, `bias_grad` for kRowSumsOfA, else null).
  LtOutcome run(const LtProduct& p, float alpha, const void* a, const void* b, float beta, float* c,
                const float* bias = nullptr, float* bias_grad = nullptr);

 private:
  struct Plan {
    cublasLtMatmulDesc_t desc = nullptr;
    cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;  // cuBLASLt's A, B, C = D
    cublasLtMatmulAlgo_t algo{};
    bool found = false;  // false: the heuristic offered no algorithm (cached, not retried)
  };
  // (trans_a, trans_b, M, N, K, lda, ldb, ldc, type, epilogue, alignments of a, b, c and
  // of the bias vector, in bytes)
  using Key = std::tuple<bool, bool, std::int64_t, std::int64_t, std::int64_t, std::int64_t,
                         std::int64_t, std::int64_t, int, int, int, int, int, int>;

  // The cached plan of `key`, made on first use (`vector`: the epilogue's bias or bias
  // gradient, for its alignment); null on a failure (logged).
  const Plan* plan_for(const Key& key, const LtProduct& p, const float* vector);
  static void destroy(Plan& plan);

  // Bounds the cache: a run sees a handful of shapes per layer kind, but an evaluation
  // over many lengths would otherwise grow it without end.
  static constexpr std::size_t kMaxPlans = 512;
  // cuBLAS recommends 32 MiB of workspace on Hopper (4 MiB before); llm.c uses 32 MiB too.
  static constexpr std::size_t kWorkspaceBytes = std::size_t{32} << 20;

  ErrorLog& log_;
  bool allow_tf32_;
  cudaStream_t stream_;
  cublasLtHandle_t handle_ = nullptr;
  void* workspace_ = nullptr;
  std::map<Key, Plan> plans_;
};

}  // namespace scion::runtime::cuda
