// e^x that vectorises: the glibc expf call in a loop keeps GELU and softmax scalar, and
// they were the largest non-BLAS cost of a training step. Range reduction to
// x = n·ln2 + r with |r| ≤ ln2/2, a degree-6 polynomial for e^r (Cephes' expf
// coefficients, about 1 ulp on that range), and 2^n built in the exponent bits. Below -87
// the result is 0 (never a denormal, whose arithmetic is slow); above 88 it is e^88.
// Free of branches, so loops over it vectorise: clamps are min/max, n is rounded with the
// 1.5·2^23 trick (adding it pushes the fraction out of the mantissa, subtracting it back
// leaves the nearest integer), and the one remaining choice is a select. GCC kept the
// earlier form's `x < 0 ? -0.5 : 0.5` rounding as control flow and left GELU scalar.
#pragma once

#include <algorithm>
#include <bit>
#include <cstdint>

namespace scion::runtime::cpu {

inline float fast_exp(float input) {
  const float x = std::min(std::max(input, -87.0f), 88.0f);
  const float n = (x * 1.44269504088896341f + 12582912.0f) - 12582912.0f;
  const float r = (x - n * 0.693359375f) + n * 2.12194440e-4f;  // ln2 in two parts
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r * r + r + 1.0f;
  const std::int32_t bits = (static_cast<std::int32_t>(n) + 127) << 23;
  const float e = p * std::bit_cast<float>(bits);
  return input < -87.0f ? 0.0f : e;
}

}  // namespace scion::runtime::cpu
