// Element types of stored tensors, with their safetensors names.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

namespace scion::lineage {

enum class DType { kF32, kF16, kBF16 };

// "F32", "F16", "BF16": the names safetensors and the store use.
std::string_view dtype_name(DType dtype);
std::optional<DType> parse_dtype(std::string_view name);
std::size_t dtype_size(DType dtype);

// How many elements of `bytes` (little-endian values of `dtype`) are NaN or infinite: an
// element whose exponent bits are all ones, read from the bits, so no conversion is needed.
std::int64_t count_non_finite(DType dtype, std::span<const std::byte> bytes);

}  // namespace scion::lineage
