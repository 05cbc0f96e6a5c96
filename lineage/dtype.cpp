#include "lineage/dtype.h"

#include <array>
#include <cstring>

namespace scion::lineage {

namespace {

struct DTypeInfo {
  DType dtype;
  std::string_view name;
  std::size_t size;
};

constexpr std::array<DTypeInfo, 15> kDTypes = {{
    {DType::kF32, "F32", 4},       {DType::kF16, "F16", 2},       {DType::kBF16, "BF16", 2},
    {DType::kF64, "F64", 8},       {DType::kF8E4M3, "F8_E4M3", 1}, {DType::kF8E5M2, "F8_E5M2", 1},
    {DType::kI64, "I64", 8},       {DType::kI32, "I32", 4},       {DType::kI16, "I16", 2},
    {DType::kI8, "I8", 1},         {DType::kU64, "U64", 8},       {DType::kU32, "U32", 4},
    {DType::kU16, "U16", 2},       {DType::kU8, "U8", 1},         {DType::kBool, "BOOL", 1},
}};

const DTypeInfo& info(DType dtype) {
  for (const DTypeInfo& i : kDTypes)
    if (i.dtype == dtype) return i;
  return kDTypes[0];  // unreachable: every enumerator has an entry
}

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

float bits_to_float(std::uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

// IEEE half to float, subnormals and infinities included.
float half_to_float(std::uint16_t h) {
  const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
  std::uint32_t exponent = (h >> 10) & 0x1Fu;
  std::uint32_t mantissa = h & 0x3FFu;
  if (exponent == 0x1F) return bits_to_float(sign | 0x7F800000u | (mantissa << 13));
  if (exponent == 0) {
    if (mantissa == 0) return bits_to_float(sign);
    // Subnormal: normalise the mantissa.
    exponent = 1;
    while ((mantissa & 0x400u) == 0) {
      mantissa <<= 1;
      --exponent;
    }
    mantissa &= 0x3FFu;
  }
  return bits_to_float(sign | ((exponent + 112) << 23) | (mantissa << 13));
}

template <class T, class Convert>
void convert_all(std::span<const std::byte> bytes, std::vector<float>& out, Convert convert) {
  const std::size_t n = bytes.size() / sizeof(T);
  out.resize(n);
  for (std::size_t i = 0; i < n; ++i) {
    T value;
    std::memcpy(&value, bytes.data() + i * sizeof(T), sizeof(T));
    out[i] = convert(value);
  }
}

}  // namespace

std::string_view dtype_name(DType dtype) { return info(dtype).name; }

std::optional<DType> parse_dtype(std::string_view name) {
  for (const DTypeInfo& i : kDTypes)
    if (i.name == name) return i.dtype;
  return std::nullopt;
}

std::size_t dtype_size(DType dtype) { return info(dtype).size; }

std::optional<std::int64_t> tensor_byte_count(DType dtype, std::span<const std::int64_t> shape) {
  std::int64_t count = static_cast<std::int64_t>(dtype_size(dtype));
  for (std::int64_t dim : shape)
    if (dim < 0 || __builtin_mul_overflow(count, dim, &count)) return std::nullopt;
  return count;
}

bool is_convertible_to_float32(DType dtype) {
  return dtype == DType::kF32 || dtype == DType::kF16 || dtype == DType::kBF16 ||
         dtype == DType::kF64;
}

std::vector<float> to_float32(DType dtype, std::span<const std::byte> bytes) {
  std::vector<float> out;
  switch (dtype) {
    case DType::kF32:
      convert_all<float>(bytes, out, [](float v) { return v; });
      break;
    case DType::kF64:
      convert_all<double>(bytes, out, [](double v) { return static_cast<float>(v); });
      break;
    case DType::kF16:
      convert_all<std::uint16_t>(bytes, out, half_to_float);
      break;
    case DType::kBF16:
      convert_all<std::uint16_t>(bytes, out, [](std::uint16_t v) {
        return bits_to_float(static_cast<std::uint32_t>(v) << 16);
      });
      break;
    default:
      break;
  }
  return out;
}

std::int64_t count_non_finite(DType dtype, std::span<const std::byte> bytes) {
  switch (dtype) {
    case DType::kF32:
      return count_all_ones<std::uint32_t>(bytes, 0x7F800000u);
    case DType::kF16:
      return count_all_ones<std::uint16_t>(bytes, 0x7C00u);
    case DType::kBF16:
      return count_all_ones<std::uint16_t>(bytes, 0x7F80u);
    case DType::kF64:
      return count_all_ones<std::uint64_t>(bytes, 0x7FF0000000000000ull);
    case DType::kF8E5M2:
      return count_all_ones<std::uint8_t>(bytes, 0x7Cu);
    case DType::kF8E4M3: {
      // E4M3 has no infinities; NaN is S.1111.111.
      std::int64_t count = 0;
      for (std::byte b : bytes) count += (std::to_integer<std::uint8_t>(b) & 0x7Fu) == 0x7Fu;
      return count;
    }
    default:
      return 0;
  }
}

}  // namespace scion::lineage
