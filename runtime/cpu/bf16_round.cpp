#include "runtime/cpu/bf16_round.h"

#include <bit>

#include "runtime/cpu/parallel.h"

namespace scion::runtime::cpu {
namespace {

// runtime::float_to_bf16 without its branch, so that loops over it vectorise.
inline std::uint32_t bf16_bits(float value) {
  const std::uint32_t bits = std::bit_cast<std::uint32_t>(value);
  const std::uint32_t rounded = (bits + 0x7fff + ((bits >> 16) & 1)) >> 16;
  const std::uint32_t quiet_nan = (bits >> 16) | 0x40;
  return value != value ? quiet_nan : rounded;
}

}  // namespace

SCION_SIMD_CLONES void round_to_bf16_range(std::uint16_t* dst, const float* src, std::int64_t n) {
#pragma omp simd
  for (std::int64_t i = 0; i < n; ++i) dst[i] = static_cast<std::uint16_t>(bf16_bits(src[i]));
}

SCION_SIMD_CLONES void round_to_bf16_values_range(float* dst, const float* src, std::int64_t n) {
#pragma omp simd
  for (std::int64_t i = 0; i < n; ++i) dst[i] = std::bit_cast<float>(bf16_bits(src[i]) << 16);
}

SCION_SIMD_CLONES void widen_bf16_range(float* dst, const std::uint16_t* src, std::int64_t n) {
#pragma omp simd
  for (std::int64_t i = 0; i < n; ++i)
    dst[i] = std::bit_cast<float>(static_cast<std::uint32_t>(src[i]) << 16);
}

void round_to_bf16(std::uint16_t* dst, const float* src, std::int64_t n) {
  for_each_block(n, [&](std::int64_t begin, std::int64_t end) {
    round_to_bf16_range(dst + begin, src + begin, end - begin);
  });
}

void round_to_bf16_values(float* dst, const float* src, std::int64_t n) {
  for_each_block(n, [&](std::int64_t begin, std::int64_t end) {
    round_to_bf16_values_range(dst + begin, src + begin, end - begin);
  });
}

void widen_bf16(float* dst, const std::uint16_t* src, std::int64_t n) {
  for_each_block(n, [&](std::int64_t begin, std::int64_t end) {
    widen_bf16_range(dst + begin, src + begin, end - begin);
  });
}

}  // namespace scion::runtime::cpu
