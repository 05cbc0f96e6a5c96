#include "lineage/dtype.h"

#include <cstring>

namespace scion::lineage {

std::string_view dtype_name(DType dtype) {
  switch (dtype) {
    case DType::kF32:
      return "F32";
    case DType::kF16:
      return "F16";
    case DType::kBF16:
      return "BF16";
  }
  return "?";
}

std::optional<DType> parse_dtype(std::string_view name) {
  if (name == "F32") return DType::kF32;
  if (name == "F16") return DType::kF16;
  if (name == "BF16") return DType::kBF16;
  return std::nullopt;
}

std::size_t dtype_size(DType dtype) { return dtype == DType::kF32 ? 4 : 2; }

namespace {

template <class Bits>
std::int64_t count_all_ones(std::span<const std::byte> bytes, Bits exponent_mask) {
  std::int64_t count = 0;
  for (std::size_t i = 0; i + sizeof(Bits) <= bytes.size(); i += sizeof(Bits)) {
    Bits bits;
    std::memcpy(&bits, bytes.data() + i, sizeof(Bits));
    count += (bits & exponent_mask) == exponent_mask;
  }
  return count;
}

}  // namespace

std::int64_t count_non_finite(DType dtype, std::span<const std::byte> bytes) {
  switch (dtype) {
    case DType::kF32:
      return count_all_ones<std::uint32_t>(bytes, 0x7F800000u);
    case DType::kF16:
      return count_all_ones<std::uint16_t>(bytes, 0x7C00u);
    case DType::kBF16:
      return count_all_ones<std::uint16_t>(bytes, 0x7F80u);
  }
  return 0;
}

}  // namespace scion::lineage
