// Rounding fp32 to bf16 (round to nearest even; NaN stays NaN, overflow becomes
// infinity: runtime::float_to_bf16's rule) and widening back, as vectorised loops.
//
// Every bf16 product rounds its fp32 operands with these, so they are written to
// vectorise (no branch: the NaN case is a select) and carry AVX2 and AVX-512 copies
// (SCION_SIMD_CLONES, parallel.h). They compute float_to_bf16 bit for bit; oneDNN's and
// the CPU's own conversion instructions are not used because AVX512_BF16's treats
// subnormal inputs as zero. The *_range forms run on the calling thread (for kernels that
// are already inside a parallel loop); the others split large arrays over the team.
#pragma once

#include <cstdint>

namespace scion::runtime::cpu {

// dst[i] = the bf16 bits of src[i], i in [0, n).
void round_to_bf16_range(std::uint16_t* dst, const float* src, std::int64_t n);
// dst[i] = src[i] rounded to the nearest bf16 value, held as a float (dst may be src).
void round_to_bf16_values_range(float* dst, const float* src, std::int64_t n);
// dst[i] = the float of bf16 bits src[i].
void widen_bf16_range(float* dst, const std::uint16_t* src, std::int64_t n);

// The same over the OpenMP team when n is large (parallel.h: for_each_block).
void round_to_bf16(std::uint16_t* dst, const float* src, std::int64_t n);
void round_to_bf16_values(float* dst, const float* src, std::int64_t n);
void widen_bf16(float* dst, const std::uint16_t* src, std::int64_t n);

}  // namespace scion::runtime::cpu
