// Tensors: a typed, shaped view of memory that someone else owns.
//
// A Tensor never owns its bytes. Storage lives in an Arena (runtime/arena.h): one
// allocation per role (parameters, gradients, optimizer state, activations) carved into
// named views, so a training step allocates nothing. Views of one arena may
// be shared by many models (the weight-dedup pool binds one buffer per digest to every
// model that uses it; see runtime/model/parameter_binding.h).
//
// Compute on the CPU is fp32. bf16 and fp16 exist for storage and transfer: convert()
// moves values between dtypes; kernels take fp32 pointers from Tensor::f32().
// Tensors are plain values; copying one copies the view, not the data.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace scion::runtime {

enum class DType { kF32, kBF16, kF16 };
enum class Device { kCpu, kCuda };

std::size_t dtype_size(DType dtype);
const char* dtype_name(DType dtype);

struct Tensor {
  void* data = nullptr;
  std::vector<std::int64_t> shape;
  DType dtype = DType::kF32;
  Device device = Device::kCpu;

  std::int64_t numel() const;
  std::size_t bytes() const { return static_cast<std::size_t>(numel()) * dtype_size(dtype); }
  bool empty() const { return data == nullptr; }
  // REQUIRES: dtype == kF32.
  float* f32() const;
  // Rows [begin, end) of the leading dimension, as a view of the same memory.
  // REQUIRES: !shape.empty(), 0 <= begin <= end <= shape[0].
  Tensor rows(std::int64_t begin, std::int64_t end) const;
};

// Round-to-nearest-even conversions; NaN stays NaN, overflow becomes infinity.
// The bf16 pair is inline: the bf16 matmuls round every operand element with it.
inline std::uint16_t float_to_bf16(float value) {
  const std::uint32_t bits = std::bit_cast<std::uint32_t>(value);
  if (value != value) return static_cast<std::uint16_t>((bits >> 16) | 0x40);  // NaN stays NaN
  const std::uint32_t rounding = 0x7fff + ((bits >> 16) & 1);
  return static_cast<std::uint16_t>((bits + rounding) >> 16);
}
inline float bf16_to_float(std::uint16_t bits) {
  return std::bit_cast<float>(static_cast<std::uint32_t>(bits) << 16);
}
std::uint16_t float_to_fp16(float value);
float fp16_to_float(std::uint16_t bits);

// Copies `src` into `dst` converting the dtype element by element.
// REQUIRES: same numel, both on the CPU.
void convert(const Tensor& src, const Tensor& dst);

std::string shape_string(const std::vector<std::int64_t>& shape);

}  // namespace scion::runtime
