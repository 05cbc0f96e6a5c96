// Other tools' words where scion has its own (issue #40): PEFT's LoraConfig and
// transformers' TrainingArguments keys, and Hugging Face module names for LoRA targets.
// Someone coming from PEFT writes `target_modules: [query, value]` or `learning_rate:`;
// the loader answers with scion's spelling of exactly that (`targets: [q, v]`,
// `optimizer: {lr: ...}`) instead of a spelling guess. Nothing here is accepted as
// written: a recipe has one spelling, so that its hash means one thing.
#pragma once

#include <span>
#include <string>
#include <string_view>

#include "spec/yaml_tree.h"

namespace scion::spec {

// scion's linears for a Hugging Face module name (its last components): "q" for BERT's
// "query", Llama's "q_proj", DistilBERT's "q_lin"; "q, k, v" for GPT-2's fused "c_attn";
// "" for a name that is none of them or names different linears in different bases
// ("dense", "c_proj").
std::string linear_targets_of_module(std::string_view module);

// "; ..." saying how to write `key`, an unknown key of a mapping whose keys are
// `allowed`, in scion's words, with its `value` carried over where it can be; "" when
// `key` is not another tool's word for one of `allowed`.
std::string foreign_key_hint(std::string_view key, const YamlNode& value,
                             std::span<const std::string_view> allowed);

}  // namespace scion::spec
