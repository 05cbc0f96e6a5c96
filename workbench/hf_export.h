// A stored model of an imported Hugging Face base as a complete Hugging Face model folder
// (`scion export MODEL --format huggingface -o DIR`), which transformers' AutoModelFor...
// .from_pretrained(DIR) loads with nothing missing: a classifier as the architecture's
// sequence-classification model (BERT, RoBERTa), a causal-LM descendant of a decoder as
// its causal LM (GPT2LMHeadModel, LlamaForCausalLM).
//   config.json       the base's own config.json, with the task model's `architectures`,
//                     and for a classifier `id2label` / `label2id` from the head's labels
//   model.safetensors every trunk tensor under the task model's names (lineage/
//                     hf_tensor_names.h, with hf_base_model_prefix, laid out as
//                     transformers stores it: GPT-2's c_attn joined and Conv1D weights
//                     (in, out), RoBERTa's position rows before padding_idx + 1 as zeros),
//                     every LoRA of the ancestry merged in (W + alpha/r · B·A, outermost
//                     last), BitFit biases, full fine-tunes and `unfreeze`d tensors as the
//                     model holds them, and the nearest head up the ancestry as the task
//                     model's classifier (RoBERTa: the base's pooler as classifier.dense)
//   tokenizer files   copied from the base's folder (tokenizer.json, vocab.txt, vocab.json,
//                     merges.txt, tokenizer_config.json, special_tokens_map.json, where
//                     present)
// Architectures plug in by a row of the task-model table in hf_export.cpp (the class,
// the classifier's module names, what the head must pool).
// Heads: a classification, regression or multi-label head is the sequence classifier's
// `classifier` with problem_type single_label_classification, regression or
// multi_label_classification; a token-classification head is the architecture's token
// classifier (BertForTokenClassification, RobertaForTokenClassification: `classifier` on
// every position, no pooler, as scion runs it).
// Refused, with the reason: a base that is not an imported Hugging Face folder, an
// architecture without a row, an encoder model without a classifier head or whose head
// pools otherwise than the task model does, a GPT-2 or Llama classifier (transformers'
// score layer has no bias), and adapters no plain model can hold (prefix and prompt
// tuning, a method whose adapter does not fold into the weights:
// spec::MethodBlock::unfoldable_adapter) anywhere up the ancestry.
#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "lineage/env.h"
#include "lineage/records.h"
#include "spec/workspace.h"

namespace scion::workbench {

struct HfModelFolder {
  nlohmann::json config;                                    // config.json
  std::map<std::string, std::vector<float>> tensors;        // model.safetensors, by name
  std::map<std::string, std::vector<std::int64_t>> shapes;  // same keys
  std::vector<std::filesystem::path> tokenizer_files;       // to copy, absolute
};

// What the folder holds of the model's own adaptation. kAncestorsOnly is the base folder
// that the PEFT adapter of a descendant of a descendant loads over (workbench/
// peft_export.h): its ancestors' LoRAs merged, its own adapter left to the PEFT adapter
// (and not checked here), and still the head it classifies with, so that the folder's
// classifier has the model's labels.
enum class HfMergeScope { kWholeModel, kAncestorsOnly };

// A config.json's object. Errors: kNotFound, kSpecError for anything but a JSON object.
Result<nlohmann::json> read_config_json(const std::filesystem::path& path);

// `config` (a base's config.json) as the config of a task model of class `class_name` with
// `head`: id2label and label2id from its labels, its problem_type (none for a token
// classifier, whose transformers class has no use for one), architectures.
nlohmann::json head_config(nlohmann::json config, const spec::HeadSpec& head,
                           const std::string& class_name);

// REQUIRES: `params` are `model`'s stored parameters for its current recipe; with
// kAncestorsOnly, `model`'s own adaptation changes no trunk tensor (lineage::
// check_peft_layout holds).
Result<HfModelFolder> hf_model_folder(const spec::Workspace& ws, const spec::Model& model,
                                      const lineage::LoadedParameters& params,
                                      HfMergeScope scope = HfMergeScope::kWholeModel);

// Writes the folder's files into `dir` (creating it); each file atomically.
Status write_hf_model_folder(lineage::Env& env, const std::filesystem::path& dir,
                             const HfModelFolder& folder);

}  // namespace scion::workbench
