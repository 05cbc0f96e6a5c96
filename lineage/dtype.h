// Element types of stored tensors, with their safetensors names.
#pragma once

#include <cstddef>
#include <optional>
#include <string_view>

namespace scion::lineage {

enum class DType { kF32, kF16, kBF16 };

// "F32", "F16", "BF16": the names safetensors and the store use.
std::string_view dtype_name(DType dtype);
std::optional<DType> parse_dtype(std::string_view name);
std::size_t dtype_size(DType dtype);

}  // namespace scion::lineage
