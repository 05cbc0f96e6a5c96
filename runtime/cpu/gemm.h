// Row-major single-precision GEMM on scion's one thread team.
//
// OpenBLAS runs single-threaded inside scion (the CPU backend sets its thread count to 1):
// its own pthread pool would spin in sched_yield after every product, competing for the
// cores with the OpenMP loops that run between products (profiled at ~15% of a W1 step
// on 2 cores). Instead, gemm() cuts the output into one contiguous block per OpenMP
// thread — rows, or columns when there are few rows — and each thread multiplies its
// block with a serial sgemm. Blocks never split the inner dimension, yet the last bits of
// an output can still depend on the thread count: OpenBLAS picks its kernel by the
// block's size (the op harness, tests/backend/, measures normalised differences up to
// about 1e-7 between 1 and 2 threads). One thread count always gives the same bits.
#pragma once

#include <cstdint>

namespace scion::runtime::cpu {

// c (M, N; ldc) = alpha · op(a) · op(b) + beta · c, op = transpose when trans_*.
// Called inside a parallel region, it runs serially on the calling thread.
void gemm(bool trans_a, bool trans_b, std::int64_t M, std::int64_t N, std::int64_t K, float alpha,
          const float* a, std::int64_t lda, const float* b, std::int64_t ldb, float beta, float* c,
          std::int64_t ldc);

// A product with gemm()'s signature: gemm itself, or gemm_onednn_f32 (onednn_gemm.h).
using GemmFn = void (*)(bool trans_a, bool trans_b, std::int64_t M, std::int64_t N,
                        std::int64_t K, float alpha, const float* a, std::int64_t lda,
                        const float* b, std::int64_t ldb, float beta, float* c,
                        std::int64_t ldc);

// The same on the calling thread only: for products inside a parallel loop.
void gemm_serial(bool trans_a, bool trans_b, std::int64_t M, std::int64_t N, std::int64_t K,
                 float alpha, const float* a, std::int64_t lda, const float* b, std::int64_t ldb,
                 float beta, float* c, std::int64_t ldc);

}  // namespace scion::runtime::cpu
