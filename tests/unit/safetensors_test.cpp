// Safetensors: round trips, and hostile files rejected with a Status instead of a crash.
#include "lineage/safetensors.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <span>
#include <vector>

#include "tests/unit/lineage_test_support.h"

using namespace scion;
using namespace scion::lineage;
using namespace scion::lineage::testing;

namespace {

// A file with the given header text and `data_bytes` zero bytes of tensor data.
std::vector<std::byte> make_file(const std::string& header, std::size_t data_bytes,
                                 std::uint64_t declared_length = 0) {
  const std::uint64_t length = declared_length ? declared_length : header.size();
  std::vector<std::byte> file(8 + header.size() + data_bytes);
  for (int i = 0; i < 8; ++i) file[i] = static_cast<std::byte>((length >> (8 * i)) & 0xff);
  std::memcpy(file.data() + 8, header.data(), header.size());
  return file;
}

std::string error_of(const std::vector<std::byte>& file) {
  auto parsed = parse_safetensors(file, "bad.safetensors");
  REQUIRE_FALSE(parsed.is_ok());
  CHECK(parsed.status().message().find("bad.safetensors") != std::string::npos);
  return parsed.status().message();
}

}  // namespace

TEST_CASE("safetensors files round-trip with metadata", "[safetensors]") {
  TempDir dir;
  const auto a = random_bytes(24, 1);
  const auto b = random_bytes(8, 2);
  const std::filesystem::path path = dir.path() / "model.safetensors";
  REQUIRE(write_safetensors(
              default_env(), path,
              {{"blk.0.attn_q.weight", DType::kF32, {2, 3}, a}, {"bias", DType::kBF16, {4}, b}},
              {{"scion.model", "sst2"}})
              .is_ok());
  auto read = read_safetensors(default_env(), path);
  REQUIRE(read.is_ok());
  const auto& contents = read->contents;
  CHECK(contents.metadata.at("scion.model") == "sst2");
  REQUIRE(contents.tensors.size() == 2);
  CHECK(contents.tensors[0].name == "blk.0.attn_q.weight");
  CHECK(contents.tensors[0].shape == std::vector<std::int64_t>{2, 3});
  CHECK(std::equal(contents.tensors[0].bytes.begin(), contents.tensors[0].bytes.end(), a.begin(),
                   a.end()));
  CHECK(contents.tensors[1].dtype == DType::kBF16);
  // The data starts 8-byte aligned.
  CHECK((contents.tensors[0].bytes.data() - read->region->bytes().data()) % 8 == 0);
}

TEST_CASE("hostile safetensors files are rejected with a reason", "[safetensors]") {
  CHECK(error_of(std::vector<std::byte>(5)).find("shorter than") != std::string::npos);
  CHECK(error_of(make_file("{}", 0, 1ull << 40)).find("exceeds the file size") !=
        std::string::npos);
  CHECK(error_of(make_file("{not json", 0)).find("not a JSON object") != std::string::npos);
  CHECK(error_of(make_file("[1,2]", 0)).find("not a JSON object") != std::string::npos);
  CHECK(error_of(make_file(R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", 4))
            .find("outside the 4 data bytes") != std::string::npos);
  CHECK(error_of(make_file(R"({"w":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", 8))
            .find("need 12") != std::string::npos);
  CHECK(error_of(make_file(R"({"w":{"dtype":"F128","shape":[1],"data_offsets":[0,8]}})", 8))
            .find("dtype F128") != std::string::npos);
  CHECK(error_of(
            make_file(
                R"({"w":{"dtype":"F32","shape":[4294967296,4294967296,16],"data_offsets":[0,8]}})",
                8))
            .find("overflows") != std::string::npos);
  CHECK(error_of(make_file(R"({"w":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}})", 4))
            .find("non-negative") != std::string::npos);
  CHECK(error_of(make_file(R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[8,0]}})", 8))
            .find("outside") != std::string::npos);
  CHECK(error_of(make_file(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                           R"("b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})",
                           12))
            .find("overlap") != std::string::npos);
  CHECK(error_of(make_file(R"({"w":{"dtype":"F32","shape":[1]}})", 4)).find("lacks") !=
        std::string::npos);
  CHECK(error_of(make_file(R"({"__metadata__":{"k":1}})", 0)).find("__metadata__.k") !=
        std::string::npos);
}

TEST_CASE("an empty checkpoint and zero-size tensors are valid", "[safetensors]") {
  auto empty = parse_safetensors(make_file("{}", 0), "empty.safetensors");
  REQUIRE(empty.is_ok());
  CHECK(empty->tensors.empty());
  auto zero =
      parse_safetensors(make_file(R"({"a":{"dtype":"F16","shape":[0],"data_offsets":[0,0]},)"
                                  R"("b":{"dtype":"F16","shape":[2],"data_offsets":[0,4]}})",
                                  4),
                        "zero.safetensors");
  REQUIRE(zero.is_ok());
  CHECK(zero->tensors.size() == 2);
}

TEST_CASE("non-finite values are counted in every dtype, from their bits") {
  auto bytes_of = [](const auto& values) {
    return std::span<const std::byte>(reinterpret_cast<const std::byte*>(values.data()),
                                      values.size() * sizeof(values[0]));
  };
  const std::vector<float> f32 = {1.0f, std::numeric_limits<float>::infinity(), -0.0f,
                                  std::numeric_limits<float>::quiet_NaN(),
                                  -std::numeric_limits<float>::infinity(),
                                  std::numeric_limits<float>::max(), std::numeric_limits<float>::denorm_min()};
  CHECK(count_non_finite(DType::kF32, bytes_of(f32)) == 3);
  // F16: 0x7C00 +inf, 0xFE00 NaN, 0x7BFF the largest finite; BF16: 0x7F80 +inf, 0xFFC1 NaN.
  const std::vector<std::uint16_t> f16 = {0x3C00, 0x7C00, 0xFE00, 0x7BFF};
  CHECK(count_non_finite(DType::kF16, bytes_of(f16)) == 2);
  const std::vector<std::uint16_t> bf16 = {0x3F80, 0x7F80, 0xFFC1, 0x7F7F};
  CHECK(count_non_finite(DType::kBF16, bytes_of(bf16)) == 2);
}

TEST_CASE("every safetensors dtype is read, with its element size", "[safetensors]") {
  const std::pair<const char*, std::size_t> dtypes[] = {
      {"F64", 8}, {"F32", 4}, {"F16", 2}, {"BF16", 2}, {"I64", 8}, {"I32", 4},    {"I16", 2},
      {"I8", 1},  {"U8", 1},  {"BOOL", 1}, {"U16", 2}, {"U32", 4}, {"U64", 8}, {"F8_E4M3", 1},
      {"F8_E5M2", 1}};
  for (const auto& [name, size] : dtypes) {
    const std::string header = std::string(R"({"t":{"dtype":")") + name +
                               R"(","shape":[3],"data_offsets":[0,)" + std::to_string(3 * size) +
                               "]}}";
    auto parsed = parse_safetensors(make_file(header, 3 * size), "all.safetensors");
    INFO(name);
    REQUIRE(parsed.is_ok());
    CHECK(dtype_name(parsed->tensors.at(0).dtype) == name);
    CHECK(parsed->tensors.at(0).bytes.size() == 3 * size);
  }
  // A size that disagrees with the dtype is still refused.
  CHECK(error_of(make_file(R"({"t":{"dtype":"I64","shape":[3],"data_offsets":[0,12]}})", 12))
            .find("need 24") != std::string::npos);
  CHECK(error_of(make_file(R"({"t":{"dtype":"Q4","shape":[1],"data_offsets":[0,1]}})", 1))
            .find("does not define") != std::string::npos);
}

TEST_CASE("floating-point dtypes convert to float32 exactly where they can") {
  const double f64[] = {1.5, -2.25, 1e-3};
  const std::uint16_t f16[] = {0x3C00, 0xC000, 0x0001, 0x7C00};  // 1, -2, smallest subnormal, inf
  const std::uint16_t bf16[] = {0x3F80, 0xC040};                 // 1, -3
  auto as_bytes = [](const auto& array) {
    return std::span<const std::byte>(reinterpret_cast<const std::byte*>(array), sizeof(array));
  };
  CHECK(to_float32(DType::kF64, as_bytes(f64)) == std::vector<float>{1.5f, -2.25f, 1e-3f});
  const auto halves = to_float32(DType::kF16, as_bytes(f16));
  REQUIRE(halves.size() == 4);
  CHECK(halves[0] == 1.0f);
  CHECK(halves[1] == -2.0f);
  CHECK(halves[2] == std::ldexp(1.0f, -24));
  CHECK(std::isinf(halves[3]));
  CHECK(to_float32(DType::kBF16, as_bytes(bf16)) == std::vector<float>{1.0f, -3.0f});
  CHECK(is_convertible_to_float32(DType::kF64));
  CHECK_FALSE(is_convertible_to_float32(DType::kI64));
  CHECK(count_non_finite(DType::kI64, as_bytes(f64)) == 0);
}
