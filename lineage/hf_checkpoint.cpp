#include "lineage/hf_checkpoint.h"

#include <set>

#include "lineage/hf_tensor_names.h"
#include "spec/hf_model_folder.h"

namespace scion::lineage {

Result<HfCheckpoint> read_hf_checkpoint(Env& env, const std::filesystem::path& folder,
                                        std::string_view model_type) {
  auto files = spec::hf_weight_files(folder);
  if (!files.is_ok()) return files.status();
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
        case HfTensorMapping::Kind::kParameter:
          if (!seen.insert(mapped.scion_name).second) {
            out.problems.push_back(where + ": tensor '" + t.name + "' is a second copy of '" +
                                   mapped.scion_name + "'");
            break;
          }
          t.name = mapped.scion_name;
          out.contents.tensors.push_back(t);
          break;
      }
    }
    out.regions.push_back(std::move(read->region));
  }
  return out;
}

}  // namespace scion::lineage
