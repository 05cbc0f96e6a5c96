#include <cstdint>
#include <limits>
#include <string>

#include "runtime/cuda/lt_matmul.h"

namespace scion::runtime::cuda {
namespace {

// The largest power of two, at most 256, that divides the address: what cuBLASLt's
// CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_*_BYTES describe.
int alignment_of(const void* pointer) {
  const auto address = reinterpret_cast<std::uintptr_t>(pointer);
  int alignment = 256;
  while (alignment > 1 && address % static_cast<std::uintptr_t>(alignment) != 0) alignment /= 2;
  return alignment;
}

bool fits_int(std::int64_t v) { return v >= 0 && v <= std::numeric_limits<int>::max(); }

}  // namespace

LtMatmul::LtMatmul(ErrorLog& log, bool allow_tf32, cudaStream_t stream)
    : log_(log), allow_tf32_(allow_tf32), stream_(stream) {
  cublasLtHandle_t handle = nullptr;
  const cublasStatus_t status = cublasLtCreate(&handle);
  log_.check(status, "cublasLtCreate");
  if (status != CUBLAS_STATUS_SUCCESS) return;
  handle_ = handle;
  void* workspace = nullptr;
  const cudaError_t err = cudaMalloc(&workspace, kWorkspaceBytes);
  log_.check(err, "cudaMalloc (cuBLASLt workspace)");
  if (err == cudaSuccess) workspace_ = workspace;
}

LtMatmul::~LtMatmul() {
  for (auto& [key, plan] : plans_) destroy(plan);
  if (workspace_ != nullptr) cudaFree(workspace_);
  if (handle_ != nullptr) cublasLtDestroy(handle_);
}

void LtMatmul::destroy(Plan& plan) {
  if (plan.a) cublasLtMatrixLayoutDestroy(plan.a);
  if (plan.b) cublasLtMatrixLayoutDestroy(plan.b);
  if (plan.c) cublasLtMatrixLayoutDestroy(plan.c);
  if (plan.desc) cublasLtMatmulDescDestroy(plan.desc);
  plan = Plan{};
}

const LtMatmul::Plan* LtMatmul::plan_for(const Key& key, const LtProduct& p, const float* vector) {
  if (auto it = plans_.find(key); it != plans_.end()) return &it->second;
  if (plans_.size() >= kMaxPlans) {
    for (auto& [k, plan] : plans_) destroy(plan);
    plans_.clear();
  }
  Plan plan;
  const cudaDataType_t operand = p.type == Operands::kBF16 ? CUDA_R_16BF : CUDA_R_32F;
  const cublasComputeType_t compute =
      p.type == Operands::kF32 && allow_tf32_ ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
  bool ok = true;
  auto check = [&](cublasStatus_t status, const char* what) {
    log_.check(status, what);
    ok = ok && status == CUBLAS_STATUS_SUCCESS;
  };
  check(cublasLtMatmulDescCreate(&plan.desc, compute, CUDA_R_32F), "cublasLtMatmulDescCreate");
  // Column-major: cuBLASLt's A is our b, its B our a (see lt_matmul.h).
  const cublasOperation_t op_lt_a = p.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t op_lt_b = p.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_DEFAULT;
  if (p.epilogue == Epilogue::kBias) epilogue = CUBLASLT_EPILOGUE_BIAS;
  if (p.epilogue == Epilogue::kRowSumsOfA) epilogue = CUBLASLT_EPILOGUE_BGRADB;
  if (ok) {
    check(cublasLtMatmulDescSetAttribute(plan.desc, CUBLASLT_MATMUL_DESC_TRANSA, &op_lt_a,
                                         sizeof op_lt_a),
          "cublasLtMatmulDescSetAttribute (TRANSA)");
    check(cublasLtMatmulDescSetAttribute(plan.desc, CUBLASLT_MATMUL_DESC_TRANSB, &op_lt_b,
                                         sizeof op_lt_b),
          "cublasLtMatmulDescSetAttribute (TRANSB)");
    check(cublasLtMatmulDescSetAttribute(plan.desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue,
                                         sizeof epilogue),
          "cublasLtMatmulDescSetAttribute (EPILOGUE)");
  }
  if (p.epilogue != Epilogue::kNone && ok) {
    // The bias (or its gradient) is fp32 like the output; said outright rather than left
    // to the default (-1: the output's type), which has exceptions for other types.
    const std::int32_t bias_type = CUDA_R_32F;
    check(cublasLtMatmulDescSetAttribute(plan.desc, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bias_type,
                                         sizeof bias_type),
          "cublasLtMatmulDescSetAttribute (BIAS_DATA_TYPE)");
  }
  // Layouts as stored, before op: cuBLASLt's A is b stored (K, N) row-major when not
  // transposed, i.e. column-major (N, K); its B is a, column-major (K, M) or (M, K).
  const std::uint64_t lt_a_rows = p.trans_b ? p.K : p.N, lt_a_cols = p.trans_b ? p.N : p.K;
  const std::uint64_t lt_b_rows = p.trans_a ? p.M : p.K, lt_b_cols = p.trans_a ? p.K : p.M;
  if (ok) {
    check(cublasLtMatrixLayoutCreate(&plan.a, operand, lt_a_rows, lt_a_cols, p.ldb),
          "cublasLtMatrixLayoutCreate (A)");
    check(cublasLtMatrixLayoutCreate(&plan.b, operand, lt_b_rows, lt_b_cols, p.lda),
          "cublasLtMatrixLayoutCreate (B)");
    check(cublasLtMatrixLayoutCreate(&plan.c, CUDA_R_32F, static_cast<std::uint64_t>(p.N),
                                     static_cast<std::uint64_t>(p.M), p.ldc),
          "cublasLtMatrixLayoutCreate (C)");
  }
  if (ok) {
    cublasLtMatmulPreference_t preference = nullptr;
    check(cublasLtMatmulPreferenceCreate(&preference), "cublasLtMatmulPreferenceCreate");
    if (ok) {
      const std::uint64_t workspace = kWorkspaceBytes;
      check(cublasLtMatmulPreferenceSetAttribute(
                preference, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace, sizeof workspace),
            "cublasLtMatmulPreferenceSetAttribute (MAX_WORKSPACE_BYTES)");
      const std::uint32_t align_a =
          static_cast<std::uint32_t>(std::get<11>(key));  // cuBLASLt's A: our b
      const std::uint32_t align_b =
          static_cast<std::uint32_t>(std::get<10>(key));  // cuBLASLt's B: our a
      const std::uint32_t align_c = static_cast<std::uint32_t>(std::get<12>(key));
      struct Alignment {
        cublasLtMatmulPreferenceAttributes_t attribute;
        const std::uint32_t* bytes;
        const char* what;
      };
      for (const Alignment& a :
           {Alignment{CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &align_a,
                      "cublasLtMatmulPreferenceSetAttribute (MIN_ALIGNMENT_A_BYTES)"},
            Alignment{CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, &align_b,
                      "cublasLtMatmulPreferenceSetAttribute (MIN_ALIGNMENT_B_BYTES)"},
            Alignment{CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &align_c,
                      "cublasLtMatmulPreferenceSetAttribute (MIN_ALIGNMENT_C_BYTES)"},
            Alignment{CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &align_c,
                      "cublasLtMatmulPreferenceSetAttribute (MIN_ALIGNMENT_D_BYTES)"}})
        check(cublasLtMatmulPreferenceSetAttribute(preference, a.attribute, a.bytes,
                                                   sizeof *a.bytes),
              a.what);
    }
    if (ok) {
      // The heuristic reads the bias pointer for its alignment (part of the key).
      if (p.epilogue != Epilogue::kNone)
        check(cublasLtMatmulDescSetAttribute(plan.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &vector,
                                             sizeof vector),
              "cublasLtMatmulDescSetAttribute (BIAS_POINTER)");
      cublasLtMatmulHeuristicResult_t result{};
      int count = 0;
      const cublasStatus_t status = cublasLtMatmulAlgoGetHeuristic(
          handle_, plan.desc, plan.a, plan.b, plan.c, plan.c, preference, 1, &result, &count);
      // NOT_SUPPORTED: no heuristic for this configuration, the same as no algorithm.
      if (status != CUBLAS_STATUS_NOT_SUPPORTED) check(status, "cublasLtMatmulAlgoGetHeuristic");
      if (ok && status == CUBLAS_STATUS_SUCCESS && count > 0 &&
          result.state == CUBLAS_STATUS_SUCCESS) {
        plan.algo = result.algo;
        plan.found = true;
      }
    }
    if (preference) cublasLtMatmulPreferenceDestroy(preference);
  }
  if (!ok) {
    destroy(plan);
    return nullptr;
  }
  return &plans_.emplace(key, plan).first->second;
}

LtOutcome LtMatmul::run(const LtProduct& p, float alpha, const void* a, const void* b, float beta,
                        float* c, const float* bias, float* bias_grad) {
  if (p.M == 0 || p.N == 0) return LtOutcome::kIssued;
  if (!ready()) {
    log_.fail("a product was asked of a CUDA backend without a cuBLASLt handle and workspace");
    return LtOutcome::kFailed;
  }
  // The sizes cuBLASLt takes are 64-bit, but its kernels index with int on some paths;
  // products this large are split by the callers' batches long before.
  if (!fits_int(p.M) || !fits_int(p.N) || !fits_int(p.K)) {
    log_.fail("a product of " + std::to_string(p.M) + " x " + std::to_string(p.N) + " x " +
              std::to_string(p.K) + " is beyond 32-bit sizes; split the batch");
    return LtOutcome::kFailed;
  }
  const float* vector = p.epilogue == Epilogue::kBias ? bias : bias_grad;
  const Key key{p.trans_a,
                p.trans_b,
                p.M,
                p.N,
                p.K,
                p.lda,
                p.ldb,
                p.ldc,
                static_cast<int>(p.type),
                static_cast<int>(p.epilogue),
                alignment_of(a),
                alignment_of(b),
                alignment_of(c),
                p.epilogue == Epilogue::kNone ? 0 : alignment_of(vector)};
  const Plan* plan = plan_for(key, p, vector);
  if (plan == nullptr) return LtOutcome::kFailed;
  if (!plan->found) return LtOutcome::kNoAlgorithm;
  if (p.epilogue != Epilogue::kNone)
    log_.check(cublasLtMatmulDescSetAttribute(plan->desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER,
                                              &vector, sizeof vector),
               "cublasLtMatmulDescSetAttribute (BIAS_POINTER)");
  const cublasStatus_t status =
      cublasLtMatmul(handle_, plan->desc, &alpha, b, plan->a, a, plan->b, &beta, c, plan->c, c,
                     plan->c, &plan->algo, workspace_, kWorkspaceBytes, stream_);
  log_.check(status, "cublasLtMatmul");
  return status == CUBLAS_STATUS_SUCCESS ? LtOutcome::kIssued : LtOutcome::kFailed;
}

}  // namespace scion::runtime::cuda
