// Row-major GEMM on oneDNN's matmul primitive, in fp32 or bf16 (bf16 × bf16 operands,
// fp32 accumulation and fp32 output), with the same contract as cpu::gemm (gemm.h).
//
// oneDNN (Debian's libdnnl, built on OpenMP) picks the best kernel for the CPU at run
// time: AMX or AVX-512 BF16 for bf16, AVX-512 or AVX2 for fp32. It runs its loops on the
// same libgomp team as scion's own kernels, so there is one thread pool; products are
// always called from outside parallel regions.
//
// Primitives are created once per (shape, strides, transposes, dtype, beta) and kept for
// the life of the process: a training loop runs the same few shapes every step, and
// creating a primitive costs milliseconds (JIT). alpha is passed at run time, so LoRA
// scales do not multiply the cache. Their scratchpads are memory scion holds per thread,
// grown to the largest asked for and kept, so a step allocates nothing. onednn_gemm is
// not thread-safe: call it from one thread at a time, as the rest of the CPU backend; the
// serial forms below may run on every thread of a team at once.
//
// Where the CPU has no bf16 kernel (oneDNN 2.6 has none below AVX-512), bf16 products
// widen their operands to fp32 and run the fp32 primitive: the same values (a product
// of two bf16 numbers is exact in fp32) with fp32 accumulation, only without the speed.
#pragma once

#include <cstdint>
#include <string>

namespace scion::runtime::cpu {

enum class GemmInput { kF32, kBF16 };

// c (M, N; ldc) = alpha · op(a) · op(b) + beta · c, op = transpose when trans_*.
// a and b hold `input` values (float, or bf16 as uint16_t bits); c is fp32.
// REQUIRES: beta is 0 or 1 (the only values scion uses; each is a cached primitive).
void onednn_gemm(GemmInput input, bool trans_a, bool trans_b, std::int64_t M, std::int64_t N,
                 std::int64_t K, float alpha, const void* a, std::int64_t lda, const void* b,
                 std::int64_t ldb, float beta, float* c, std::int64_t ldc);

// The fp32 case with cpu::gemm's signature (a GemmFn).
void gemm_onednn_f32(bool trans_a, bool trans_b, std::int64_t M, std::int64_t N, std::int64_t K,
                     float alpha, const float* a, std::int64_t lda, const float* b,
                     std::int64_t ldb, float beta, float* c, std::int64_t ldc);

// For products inside parallel loops (attention's, one (sequence, head) per thread): they
// run on the calling thread alone and may run on every thread of a team at once.
//
// onednn_sgemm_serial: fp32, oneDNN's sgemm (dnnl_sgemm), any beta.
void onednn_sgemm_serial(bool trans_a, bool trans_b, std::int64_t M, std::int64_t N, std::int64_t K,
                         float alpha, const float* a, std::int64_t lda, const float* b,
                         std::int64_t ldb, float beta, float* c, std::int64_t ldc);
// serial_gemm_bf16: bf16 operands (bits), fp32 accumulation and output, on a primitive made
// for one thread. Returns false, computing nothing, where oneDNN has no bf16 kernel for it
// (see OnednnInfo::bf16_kernel). REQUIRES: beta is 0 or 1.
bool serial_gemm_bf16(bool trans_a, bool trans_b, std::int64_t M, std::int64_t N, std::int64_t K,
                      float alpha, const std::uint16_t* a, std::int64_t lda, const std::uint16_t* b,
                      std::int64_t ldb, float beta, float* c, std::int64_t ldc);

struct OnednnInfo {
  std::string version;     // "2.6.3"
  std::string isa;         // the instruction set oneDNN dispatches to ("avx2", "avx512_core_amx")
  // Whether the CPU has bf16 instructions (AVX-512 BF16 or AMX) that oneDNN uses.
  bool native_bf16 = false;
  // Whether oneDNN has a bf16 matmul kernel here (native, or emulated on AVX-512); without
  // one, bf16 products widen to fp32 (see above).
  bool bf16_kernel = false;
};

OnednnInfo onednn_info();

}  // namespace scion::runtime::cpu
