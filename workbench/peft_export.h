// `scion export MODEL --format peft -o DIR`: a descendant of an imported Hugging Face base
// as a PEFT adapter folder (lineage/peft_adapter.h names the layout and what is refused).
//
// A direct descendant of the base is its adapter alone, over the imported folder:
//   DIR/adapter_config.json, DIR/adapter_model.safetensors
// A descendant of a descendant is its own adapter over a base with its ancestors merged:
//   DIR/adapter_config.json, DIR/adapter_model.safetensors
//                 the model's own LoRA, prompt or prefix, and the head it classifies with
//                 in modules_to_save; base_model_name_or_path is DIR/base (absolute)
//   DIR/base/     a complete transformers model folder (workbench/hf_export.h,
//                 HfMergeScope::kAncestorsOnly): config.json with the model's labels,
//                 model.safetensors with every LoRA up the ancestry merged and BitFit or
//                 other trained trunk tensors as stored, the tokenizer's files
// so that PeftModel.from_pretrained(AutoModelFor...from_pretrained(DIR/base), DIR) runs the
// model as scion does. A head model's folder also holds DIR/config.json: the base's config
// with the head's id2label, label2id and problem_type (hf_export.h's head_config), so
// that its labels travel: AutoConfig.from_pretrained(DIR) gives them to the base model
// the adapter loads over (transformers reads adapter_config.json first and the base's
// config from base_model_name_or_path, which knows no labels). Ancestors with prefix or prompt
// tuning or an adapter that does not fold into the weights (spec::MethodBlock::
// unfoldable_adapter) cannot be merged and are refused (kInvalidArgument, naming them).
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "lineage/env.h"
#include "lineage/peft_adapter.h"
#include "lineage/records.h"
#include "spec/workspace.h"
#include "workbench/hf_export.h"

namespace scion::workbench {

// Where a descendant of a descendant's merged base goes, inside the adapter's folder.
inline constexpr const char* kMergedBaseFolder = "base";

struct PeftExport {
  lineage::PeftAdapterFiles adapter;
  std::optional<HfModelFolder> merged_base;   // DIR/base, for a descendant of a descendant
  std::vector<std::string> merged_ancestors;  // their adapters are in it, nearest first
};

// The files for `dir`. REQUIRES: `params` are `model`'s stored parameters for its current
// recipe.
Result<PeftExport> peft_export(const spec::Workspace& ws, const spec::Model& model,
                               const lineage::LoadedParameters& params,
                               const std::filesystem::path& dir);

// Writes the merged base (if any) first, then the adapter, creating the folders.
Status write_peft_export(lineage::Env& env, const std::filesystem::path& dir,
                         const PeftExport& exported);

}  // namespace scion::workbench
