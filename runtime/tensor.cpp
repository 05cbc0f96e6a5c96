#include "runtime/tensor.h"

#include <cassert>
#include <cmath>
#include <cstring>

namespace scion::runtime {

std::size_t dtype_size(DType dtype) { return dtype == DType::kF32 ? 4 : 2; }

const char* dtype_name(DType dtype) {
  switch (dtype) {
    case DType::kF32: return "f32";
    case DType::kBF16: return "bf16";
    case DType::kF16: return "f16";
  }
  return "?";
}

std::int64_t Tensor::numel() const {
  std::int64_t n = 1;
  for (std::int64_t d : shape) n *= d;
  return n;
}

float* Tensor::f32() const {
  assert(dtype == DType::kF32);
  return static_cast<float*>(data);
}

Tensor Tensor::rows(std::int64_t begin, std::int64_t end) const {
  assert(!shape.empty() && 0 <= begin && begin <= end && end <= shape[0]);
  Tensor view = *this;
  const std::int64_t row_elements = shape[0] == 0 ? 0 : numel() / shape[0];
  view.data = static_cast<char*>(data) + begin * row_elements * dtype_size(dtype);
  view.shape[0] = end - begin;
  return view;
}

std::uint16_t float_to_fp16(float value) {
  std::uint32_t bits;
  std::memcpy(&bits, &value, 4);
  const std::uint32_t sign = (bits >> 16) & 0x8000;
  const std::uint32_t abs_bits = bits & 0x7fffffff;
  if (abs_bits >= 0x7f800000)  // inf or nan
    return static_cast<std::uint16_t>(sign | 0x7c00 | (abs_bits > 0x7f800000 ? 0x200 : 0));
  if (abs_bits >= 0x477ff000) return static_cast<std::uint16_t>(sign | 0x7c00);  // overflow
  if (abs_bits < 0x38800000) {  // subnormal half (or zero): scale into the 2^-24 grid
    float magnitude;
    std::memcpy(&magnitude, &abs_bits, 4);
    const auto quanta = static_cast<std::uint32_t>(std::nearbyint(magnitude * 16777216.0f));
    return static_cast<std::uint16_t>(sign | quanta);
  }
  const std::uint32_t exponent = ((abs_bits >> 23) - 112) << 10;
  const std::uint32_t mantissa = abs_bits & 0x7fffff;
  std::uint32_t half = exponent | (mantissa >> 13);
  const std::uint32_t rest = mantissa & 0x1fff;
  if (rest > 0x1000 || (rest == 0x1000 && (half & 1))) ++half;  // carries into exponent correctly
  return static_cast<std::uint16_t>(sign | half);
}

float fp16_to_float(std::uint16_t h) {
  const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000) << 16;
  const std::uint32_t exponent = (h >> 10) & 0x1f;
  const std::uint32_t mantissa = h & 0x3ff;
  float value;
  if (exponent == 0) {
    value = std::ldexp(static_cast<float>(mantissa), -24);
    return sign ? -value : value;
  }
  std::uint32_t bits;
  if (exponent == 31)
    bits = sign | 0x7f800000 | (mantissa << 13);
  else
    bits = sign | ((exponent + 112) << 23) | (mantissa << 13);
  std::memcpy(&value, &bits, 4);
  return value;
}

namespace {
float load(const Tensor& t, std::int64_t i) {
  switch (t.dtype) {
    case DType::kF32: return static_cast<const float*>(t.data)[i];
    case DType::kBF16: return bf16_to_float(static_cast<const std::uint16_t*>(t.data)[i]);
    case DType::kF16: return fp16_to_float(static_cast<const std::uint16_t*>(t.data)[i]);
  }
  return 0.0f;
}
void store(const Tensor& t, std::int64_t i, float v) {
  switch (t.dtype) {
    case DType::kF32: static_cast<float*>(t.data)[i] = v; break;
    case DType::kBF16: static_cast<std::uint16_t*>(t.data)[i] = float_to_bf16(v); break;
    case DType::kF16: static_cast<std::uint16_t*>(t.data)[i] = float_to_fp16(v); break;
  }
}
}  // namespace

void convert(const Tensor& src, const Tensor& dst) {
  assert(src.numel() == dst.numel());
  assert(src.device == Device::kCpu && dst.device == Device::kCpu);
  const std::int64_t n = src.numel();
  for (std::int64_t i = 0; i < n; ++i) store(dst, i, load(src, i));
}

std::string shape_string(const std::vector<std::int64_t>& shape) {
  std::string s = "(";
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(shape[i]);
  }
  return s + ")";
}

}  // namespace scion::runtime
