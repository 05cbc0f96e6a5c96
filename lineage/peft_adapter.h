// A scion LoRA descendant of an imported Hugging Face base, in PEFT's adapter layout:
// adapter_config.json plus adapter_model.safetensors, as
// `PeftModel.from_pretrained(AutoModelForSequenceClassification.from_pretrained(BASE,
// num_labels=K), DIR)` loads it (peft 0.10).
//
// Names: blk.N.<stem>.lora.<model>.{a,b} become
// base_model.model.<prefix><module>.lora_{A,B}.weight, where <module> is the Hugging
// Face module of the linear layer (lineage/hf_tensor_names.h: attn_q is
// encoder.layer.N.attention.self.query) and <prefix> the task model's ("bert."). The
// classification head head.<model>.{weight,bias} becomes the task model's classifier,
// listed in modules_to_save. LoRA's scale is alpha / r in both. target_modules is
// ["query", "value"]-style module names when they are unambiguous and every layer is
// adapted, else a regular expression naming exactly the adapted modules.
//
// Supported: a descendant of the base itself, with LoRA and a classification head of its
// own that pools [CLS] (what BertForSequenceClassification does). Anything else (prefix
// or prompt tuning, bottleneck adapters, BitFit, full fine-tuning, a descendant of a
// descendant) is refused with a message saying so.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "lineage/env.h"
#include "lineage/records.h"
#include "spec/workspace.h"

namespace scion::lineage {

struct PeftAdapterFiles {
  nlohmann::json config;  // adapter_config.json
  std::vector<std::pair<std::string, const LoadedParameter*>> tensors;  // PEFT name -> value
};

// Whether PEFT's LoRA layout can hold `model`: kInvalidArgument naming what it cannot
// (and, where it can, the format that can).
Status check_peft_layout(const spec::Workspace& workspace, const spec::Model& model);

// The PEFT name of `model`'s own parameter `scion_name` (a LoRA matrix or its head), or
// nullopt for one PEFT's LoRA layout has no name for. REQUIRES: an imported HF base.
std::optional<std::string> peft_tensor_name(const spec::Architecture& arch,
                                           const spec::Model& model,
                                           const std::string& scion_name);

// adapter_config.json for `model`. REQUIRES: check_peft_layout(workspace, model) is ok.
nlohmann::json peft_config(const spec::Workspace& workspace, const spec::Model& model);

// REQUIRES: `params` are `model`'s stored parameters. Errors: kInvalidArgument naming what
// PEFT's layout cannot hold.
Result<PeftAdapterFiles> peft_adapter_files(const spec::Workspace& workspace,
                                            const spec::Model& model,
                                            const LoadedParameters& params);

// Writes DIR/adapter_config.json and DIR/adapter_model.safetensors (creating DIR).
Status write_peft_adapter(Env& env, const std::filesystem::path& dir,
                          const PeftAdapterFiles& files);

}  // namespace scion::lineage
