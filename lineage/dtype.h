// Element types of tensors in safetensors files and the store, with their safetensors names.
//
// parse_safetensors() reads every dtype the format defines; the store holds only the
// floating-point ones (F32, F16, BF16: lineage/schema.cpp), and the runtime computes in
// F32, so an imported checkpoint's parameters are converted with to_float32().
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

namespace scion::lineage {

enum class DType {
  kF32, kF16, kBF16,  // the first three: what the store holds
  kF64, kF8E4M3, kF8E5M2,
  kI64, kI32, kI16, kI8,
  kU64, kU32, kU16, kU8,
  kBool,
};

// "F32", "F16", "BF16", "F64", "I64", "BOOL", ...: the names safetensors and the store use.
std::string_view dtype_name(DType dtype);
std::optional<DType> parse_dtype(std::string_view name);
std::size_t dtype_size(DType dtype);
// The bytes a tensor of `dtype` and `shape` takes, or nullopt for a negative dimension or
// a size past 2^63: what a stored tensor's object must hold.
std::optional<std::int64_t> tensor_byte_count(DType dtype, std::span<const std::int64_t> shape);

// F64, F32, F16 and BF16: the dtypes to_float32() converts (not the 8-bit floats, which
// no checkpoint scion reads uses for parameters).
bool is_convertible_to_float32(DType dtype);
// The values of `bytes` (little-endian `dtype` elements) as floats; F64 rounds to nearest.
// REQUIRES: is_convertible_to_float32(dtype) and bytes.size() a multiple of dtype_size.
std::vector<float> to_float32(DType dtype, std::span<const std::byte> bytes);

// How many elements of `bytes` (little-endian values of `dtype`) are NaN or infinite: an
// element whose exponent bits are all ones, read from the bits, so no conversion is needed.
// Integer and boolean tensors have none.
std::int64_t count_non_finite(DType dtype, std::span<const std::byte> bytes);

}  // namespace scion::lineage
