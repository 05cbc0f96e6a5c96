// The weights of a Hugging Face model folder, read for `scion import FOLDER`: every
// safetensors file of the folder (model.safetensors, or the shards of
// model.safetensors.index.json) mapped into memory, each tensor renamed by the
// architecture's name table (lineage/hf_tensor_names.h) and laid out as scion's
// parameter: GPT-2's Conv1D weights transposed and its fused c_attn split into q, k and v,
// RoBERTa's position table without its padding_idx + 1 leading rows.
#pragma once

#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "lineage/env.h"
#include "lineage/safetensors.h"

namespace scion::lineage {

struct HfCheckpoint {
  std::vector<std::unique_ptr<MappedRegion>> regions;  // keeps `contents` valid
  std::vector<std::vector<std::byte>> owned;  // re-laid-out tensors (transposed, split)
  // The model's parameters under scion's names, in their file dtypes.
  SafetensorsContents contents;
  // One line per tensor skipped on purpose (buffers, pretraining heads): "file: name (why)".
  std::vector<std::string> notes;
  // One line per tensor that has no place in the architecture, or appears twice.
  std::vector<std::string> problems;
};

// Errors: a folder without weights, an index naming a missing shard, a file that is not
// valid safetensors (kSpecError, naming the file).
Result<HfCheckpoint> read_hf_checkpoint(Env& env, const std::filesystem::path& folder,
                                        std::string_view model_type);

}  // namespace scion::lineage
