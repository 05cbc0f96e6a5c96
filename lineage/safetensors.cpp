#include "lineage/safetensors.h"

#include <algorithm>
#include <cstring>
#include <nlohmann/json.hpp>

namespace scion::lineage {

namespace {

using nlohmann::json;

// A header larger than this is not a tensor checkpoint (the reference implementation
// uses the same limit), and refusing it early bounds the memory a hostile file costs.
constexpr std::uint64_t kMaxHeaderBytes = 100ull * 1024 * 1024;

Status bad_file(const std::string& source, const std::string& what) {
  return spec_error("'" + source + "' is not a valid safetensors file: " + what +
                    "; re-export it with a safetensors writer");
}

std::uint64_t read_le64(const std::byte* p) {
  std::uint64_t value = 0;
  for (int i = 7; i >= 0; --i) value = (value << 8) | std::to_integer<std::uint64_t>(p[i]);
  return value;
}

Result<SafetensorsTensor> parse_entry(const std::string& source, const std::string& name,
                                      const json& entry, std::span<const std::byte> data) {
  const std::string where = "tensor '" + name + "'";
  if (!entry.is_object()) return bad_file(source, where + " is not a JSON object");
  auto dtype_it = entry.find("dtype");
  auto shape_it = entry.find("shape");
  auto offsets_it = entry.find("data_offsets");
  if (dtype_it == entry.end() || shape_it == entry.end() || offsets_it == entry.end()) {
    return bad_file(source, where + " lacks one of dtype, shape, data_offsets");
  }
  if (!dtype_it->is_string()) return bad_file(source, where + " has a non-string dtype");
  auto dtype = parse_dtype(dtype_it->get<std::string>());
  if (!dtype) {
    return bad_file(source, where + " has dtype " + dtype_it->get<std::string>() +
                                ", which the safetensors format does not define");
  }
  SafetensorsTensor tensor{name, *dtype, {}, {}};
  if (!shape_it->is_array()) return bad_file(source, where + " has a shape that is not a list");
  std::uint64_t numel = 1;
  for (const json& dim : *shape_it) {
    if (!dim.is_number_unsigned() ||
        dim.get<std::uint64_t>() > static_cast<std::uint64_t>(INT64_MAX)) {
      return bad_file(source, where + " has a shape entry that is not a non-negative integer");
    }
    const std::uint64_t d = dim.get<std::uint64_t>();
    if (__builtin_mul_overflow(numel, d, &numel)) {
      return bad_file(source, where + " has a shape whose element count overflows");
    }
    tensor.shape.push_back(static_cast<std::int64_t>(d));
  }
  std::uint64_t expected_bytes = 0;
  if (__builtin_mul_overflow(numel, static_cast<std::uint64_t>(dtype_size(*dtype)),
                             &expected_bytes)) {
    return bad_file(source, where + " is too large");
  }
  const json& offsets = *offsets_it;
  if (!offsets.is_array() || offsets.size() != 2 || !offsets[0].is_number_unsigned() ||
      !offsets[1].is_number_unsigned()) {
    return bad_file(source, where + " has data_offsets that are not two non-negative integers");
  }
  const std::uint64_t begin = offsets[0].get<std::uint64_t>();
  const std::uint64_t end = offsets[1].get<std::uint64_t>();
  if (begin > end || end > data.size()) {
    return bad_file(source, where + " has data_offsets [" + std::to_string(begin) + ", " +
                                std::to_string(end) + "] outside the " +
                                std::to_string(data.size()) + " data bytes");
  }
  if (end - begin != expected_bytes) {
    return bad_file(source, where + " has " + std::to_string(end - begin) + " bytes, but its " +
                                "shape and dtype need " + std::to_string(expected_bytes));
  }
  tensor.bytes = data.subspan(begin, end - begin);
  return tensor;
}

}  // namespace

Result<SafetensorsContents> parse_safetensors(std::span<const std::byte> file,
                                              const std::string& source) {
  if (file.size() < 8) return bad_file(source, "it is shorter than the 8-byte header length");
  const std::uint64_t header_len = read_le64(file.data());
  if (header_len > file.size() - 8 || header_len > kMaxHeaderBytes) {
    return bad_file(source, "the header length " + std::to_string(header_len) +
                                " exceeds the file size " + std::to_string(file.size()));
  }
  const char* header_text = reinterpret_cast<const char*>(file.data() + 8);
  json header = json::parse(header_text, header_text + header_len, nullptr, false);
  if (header.is_discarded() || !header.is_object()) {
    return bad_file(source, "the header is not a JSON object");
  }
  const std::span<const std::byte> data = file.subspan(8 + header_len);

  SafetensorsContents contents;
  for (const auto& [name, entry] : header.items()) {
    if (name == "__metadata__") {
      if (!entry.is_object()) return bad_file(source, "__metadata__ is not an object");
      for (const auto& [key, value] : entry.items()) {
        if (!value.is_string()) return bad_file(source, "__metadata__." + key + " is not a string");
        contents.metadata[key] = value.get<std::string>();
      }
      continue;
    }
    auto tensor = parse_entry(source, name, entry, data);
    if (!tensor.is_ok()) return tensor.status();
    contents.tensors.push_back(std::move(*tensor));
  }

  std::sort(contents.tensors.begin(), contents.tensors.end(),
            [](const SafetensorsTensor& a, const SafetensorsTensor& b) {
              return a.bytes.data() != b.bytes.data() ? a.bytes.data() < b.bytes.data()
                                                      : a.bytes.size() < b.bytes.size();
            });
  for (std::size_t i = 1; i < contents.tensors.size(); ++i) {
    const SafetensorsTensor& prev = contents.tensors[i - 1];
    const SafetensorsTensor& next = contents.tensors[i];
    if (prev.bytes.data() + prev.bytes.size() > next.bytes.data()) {
      return bad_file(source, "tensors '" + prev.name + "' and '" + next.name + "' overlap");
    }
  }
  return contents;
}

Result<MappedSafetensors> read_safetensors(Env& env, const std::filesystem::path& path) {
  auto region = env.map_file(path);
  if (!region.is_ok()) return region.status();
  auto contents = parse_safetensors((*region)->bytes(), path.string());
  if (!contents.is_ok()) return contents.status();
  return MappedSafetensors{std::move(*region), std::move(*contents)};
}

std::vector<std::span<const std::byte>> safetensors_pieces(
    const std::vector<SafetensorsTensor>& tensors,
    const std::map<std::string, std::string>& metadata, SafetensorsHeader& header) {
  json fields = json::object();
  if (!metadata.empty()) fields["__metadata__"] = metadata;
  std::uint64_t offset = 0;
  for (const SafetensorsTensor& t : tensors) {
    fields[t.name] = {{"dtype", std::string(dtype_name(t.dtype))},
                      {"shape", t.shape},
                      {"data_offsets", {offset, offset + t.bytes.size()}}};
    offset += t.bytes.size();
  }
  header.text = fields.dump(-1, ' ', false, json::error_handler_t::replace);
  // Pad with spaces so the tensor data starts 8-byte aligned, as the format recommends.
  header.text.append((8 - header.text.size() % 8) % 8, ' ');
  for (int i = 0; i < 8; ++i)
    header.length[i] = static_cast<std::byte>((header.text.size() >> (8 * i)) & 0xff);

  std::vector<std::span<const std::byte>> pieces;
  pieces.emplace_back(header.length, 8);
  pieces.emplace_back(reinterpret_cast<const std::byte*>(header.text.data()), header.text.size());
  for (const SafetensorsTensor& t : tensors) pieces.push_back(t.bytes);
  return pieces;
}

Status write_safetensors(Env& env, const std::filesystem::path& path,
                         const std::vector<SafetensorsTensor>& tensors,
                         const std::map<std::string, std::string>& metadata) {
  SafetensorsHeader header;
  return write_file_atomically(env, path, safetensors_pieces(tensors, metadata, header));
}

}  // namespace scion::lineage
