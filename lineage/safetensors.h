// Reading and writing safetensors files: an 8-byte little-endian header length, a JSON
// header {name: {dtype, shape, data_offsets: [begin, end]}, "__metadata__": {str: str}},
// then the tensor bytes. Every dtype the format defines is read (lineage/dtype.h).
//
// parse_safetensors() treats its input as hostile: every length, offset and shape is
// checked (header past the end of the file, offsets out of bounds or overlapping, shapes
// whose element count overflows, sizes that disagree with the dtype), and a bad file is
// reported as a Status, never a crash.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "lineage/dtype.h"
#include "lineage/env.h"

namespace scion::lineage {

struct SafetensorsTensor {
  std::string name;
  DType dtype = DType::kF32;
  std::vector<std::int64_t> shape;
  std::span<const std::byte> bytes;  // borrowed: into the parsed buffer, or the caller's
};

struct SafetensorsContents {
  std::map<std::string, std::string> metadata;  // __metadata__
  std::vector<SafetensorsTensor> tensors;       // in file order (by data offset)
};

// Parses a whole safetensors file held in memory; the tensors point into `file`.
// `source` names the file in error messages.
Result<SafetensorsContents> parse_safetensors(std::span<const std::byte> file,
                                              const std::string& source);

// A safetensors file mapped into memory, with its parsed contents pointing into it.
struct MappedSafetensors {
  std::unique_ptr<MappedRegion> region;
  SafetensorsContents contents;
};
Result<MappedSafetensors> read_safetensors(Env& env, const std::filesystem::path& path);

// A safetensors file's leading bytes: its header's length and text (padded to 8 bytes).
struct SafetensorsHeader {
  std::byte length[8];
  std::string text;
};

// The bytes of a safetensors file holding `tensors` (in the given order) and `metadata`,
// as pieces to write one after another: the header's length, its text, each tensor's
// bytes. The pieces point into `header` and the tensors, which must outlive them. For a
// stream, which needs no file: the header comes first and knows every size.
// REQUIRES: each tensor's bytes match its shape and dtype; names are unique.
std::vector<std::span<const std::byte>> safetensors_pieces(
    const std::vector<SafetensorsTensor>& tensors,
    const std::map<std::string, std::string>& metadata, SafetensorsHeader& header);

// Writes `tensors` (in the given order) and `metadata` to `path` atomically.
// REQUIRES: each tensor's bytes match its shape and dtype; names are unique.
Status write_safetensors(Env& env, const std::filesystem::path& path,
                         const std::vector<SafetensorsTensor>& tensors,
                         const std::map<std::string, std::string>& metadata);

}  // namespace scion::lineage
