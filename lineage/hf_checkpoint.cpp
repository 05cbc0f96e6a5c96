#include "lineage/hf_checkpoint.h"

#include <algorithm>
#include <set>

#include "lineage/hf_tensor_names.h"
#include "spec/hf_model_folder.h"

namespace scion::lineage {

namespace {

// `t`'s values laid out as scion's parameter: `part` of `parts` equal parts along the
// output dimension (the last of a Conv1D weight, the first otherwise), transposed for a
// Conv1D weight, without the first `skip_rows` rows. The bytes live in `owned` unless
// they are a plain slice of the file.
Result<SafetensorsTensor> laid_out(const SafetensorsTensor& t, const HfTensorMapping& how,
                                   std::size_t part, std::size_t parts, std::int64_t skip_rows,
                                   std::vector<std::vector<std::byte>>& owned) {
  const std::size_t element = dtype_size(t.dtype);
  SafetensorsTensor out = t;
  const bool matrix = t.shape.size() == 2;
  if ((how.conv1d || skip_rows > 0) && !matrix)
    return spec_error("tensor '" + t.name + "' should be a matrix");
  if (skip_rows > 0) {
    if (t.shape[0] <= skip_rows)
      return spec_error("tensor '" + t.name + "' has " + std::to_string(t.shape[0]) +
                        " rows; RoBERTa's positions start at row " + std::to_string(skip_rows));
    const std::size_t row = static_cast<std::size_t>(t.shape[1]) * element;
    out.bytes = t.bytes.subspan(static_cast<std::size_t>(skip_rows) * row);
    out.shape[0] -= skip_rows;
    return out;
  }
  const std::size_t split_dim = how.conv1d ? 1 : 0;
  if (t.shape.empty() || t.shape[split_dim] % static_cast<std::int64_t>(parts) != 0)
    return spec_error("tensor '" + t.name + "' does not split into " + std::to_string(parts) +
                      " equal parts");
  out.shape[split_dim] /= static_cast<std::int64_t>(parts);
  if (!how.conv1d) {  // parts along the first dimension are contiguous slices
    const std::size_t size = out.bytes.size() / parts;
    out.bytes = t.bytes.subspan(part * size, size);
    return out;
  }
  const auto in = static_cast<std::size_t>(t.shape[0]);
  const auto full = static_cast<std::size_t>(t.shape[1]);
  const auto cols = static_cast<std::size_t>(out.shape[1]);
  std::vector<std::byte>& bytes = owned.emplace_back(in * cols * element);
  for (std::size_t i = 0; i < in; ++i)
    for (std::size_t o = 0; o < cols; ++o)
      std::copy_n(t.bytes.data() + (i * full + part * cols + o) * element, element,
                  bytes.data() + (o * in + i) * element);
  out.shape = {static_cast<std::int64_t>(cols), static_cast<std::int64_t>(in)};
  out.bytes = bytes;
  return out;
}

}  // namespace

Result<HfCheckpoint> read_hf_checkpoint(Env& env, const std::filesystem::path& folder,
                                        std::string_view model_type) {
  auto files = spec::hf_weight_files(folder);
  if (!files.is_ok()) return files.status();
  auto offset = spec::hf_position_offset(folder, model_type);
  if (!offset.is_ok()) return offset.status();
  HfCheckpoint out;
  std::set<std::string> seen;
  for (const std::filesystem::path& file : *files) {
    auto read = read_safetensors(env, file);
    if (!read.is_ok()) return read.status();
    const std::string where = file.filename().string();
    for (SafetensorsTensor& t : read->contents.tensors) {
      const HfTensorMapping mapped = map_hf_tensor(model_type, t.name);
      switch (mapped.kind) {
        case HfTensorMapping::Kind::kSkipped:
          out.notes.push_back(where + ": skipped '" + t.name + "' (" + mapped.note + ")");
          break;
        case HfTensorMapping::Kind::kUnknown:
          out.problems.push_back(where + ": tensor '" + t.name + "' has no place in a " +
                                 std::string(model_type) +
                                 " model (docs/hugging-face.md lists the names scion maps)");
          break;
        case HfTensorMapping::Kind::kParameter: {
          const std::vector<std::string> names =
              mapped.fused.empty() ? std::vector<std::string>{mapped.scion_name} : mapped.fused;
          for (std::size_t part = 0; part < names.size(); ++part) {
            if (!seen.insert(names[part]).second) {
              out.problems.push_back(where + ": tensor '" + t.name + "' is a second copy of '" +
                                     names[part] + "'");
              continue;
            }
            auto placed = laid_out(t, mapped, part, names.size(),
                                   mapped.position_rows ? *offset : 0, out.owned);
            if (!placed.is_ok()) {
              out.problems.push_back(where + ": " + placed.status().message());
              continue;
            }
            placed->name = names[part];
            out.contents.tensors.push_back(*placed);
          }
          break;
        }
      }
    }
    out.regions.push_back(std::move(read->region));
  }
  return out;
}

}  // namespace scion::lineage
