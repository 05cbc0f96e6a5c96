// A scion descendant of an imported Hugging Face base, in PEFT's adapter layout:
// adapter_config.json plus adapter_model.safetensors, as peft 0.10's
// `PeftModel.from_pretrained(AutoModelForSequenceClassification.from_pretrained(BASE,
// num_labels=K), DIR)` loads it for a classifier, or over
// `AutoModelForCausalLM.from_pretrained(BASE)` for a causal language model.
//
// The registered methods (LoRA, (IA)³: spec/adaptation_method.h) write their tensors and
// their keys of adapter_config.json through their PEFT forms (spec/peft_form.h, in
// runtime/adapters/<method>/), over the base's modules as this file names them
// (PeftLayout: lineage/hf_tensor_names.h gives attn_q as encoder.layer.N.attention.self.query
// on BERT, h.N.attn.c_attn on GPT-2, model.layers.N.self_attn.q_proj on Llama, under the
// task model's prefix "bert.", "roberta.", "transformer.", "" for Llama). Their tensors sit
// below the tuner's root, base_model.model.
//
// Prompt tuning (PROMPT_TUNING): prompt.<model>.embeddings (P, C) is prompt_embeddings,
// prepended to the word embeddings as scion does (positions 0..P-1 for the virtual
// tokens, the text after them). Prefix tuning (PREFIX_TUNING): the keys and values of
// every layer, as scion stores them (the output of the reparametrisation MLP, which is
// not exported: prefix_projection false), are prompt_embeddings (P, L·2·C), row p being
// [keys_0[p] | values_0[p] | keys_1[p] | ...], which PEFT passes as past_key_values.
//
// Sequence heads (task_type SEQ_CLS: classification, regression, multi-label): the head the
// model predicts with (its own, else its nearest ancestor's: classifying_head),
// head.<owner>.{weight,bias}, becomes the task model's classifier in modules_to_save:
// BERT's `classifier`, RoBERTa's `classifier.out_proj` (with the base's pooler as
// `classifier.dense`: scion runs RoBERTa's pooler + head as RobertaClassificationHead
// does). Token classifiers (TOKEN_CLS, BERT and RoBERTa): the head is `classifier` on
// every position, without a pooler. Causal language models (objective clm on GPT-2 or
// Llama) are task_type CAUSAL_LM.
//
// A descendant of a descendant is its own adapter only: base_model_name_or_path names the
// base, and the caller (workbench/peft_export.h) points it at a folder with the ancestors'
// adapters merged. Ancestors with prefix or prompt tuning or a method whose adapter does
// not fold into the weights (spec::MethodBlock::unfoldable_adapter) cannot be merged and
// are refused.
//
// What PEFT cannot run as scion does is refused with the reason (check_peft_layout):
// BitFit, full fine-tuning and unfreeze (name --format huggingface), adapters that do not
// fold into the weights, more than one method, a GPT-2 or Llama classifier
// (their score layer has no bias), prefix tuning where transformers numbers the text's
// positions after the prefix (learned positions: BERT, RoBERTa, GPT-2) or on grouped-query
// attention, prompt tuning of a BERT or RoBERTa classifier (it would classify from the
// first virtual token), and heads that do not pool as the task model does.
#pragma once

#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "lineage/env.h"
#include "lineage/records.h"
#include "spec/peft_form.h"
#include "spec/workspace.h"

namespace scion::lineage {

using spec::PeftTensor;  // name: PEFT's key

struct PeftAdapterFiles {
  nlohmann::json config;  // adapter_config.json
  std::vector<PeftTensor> tensors;
  // The task model's transformers class (BertForSequenceClassification, ...); empty for
  // a causal LM.
  std::string task_class;
  // config.json beside the adapter: the base's config with the head's labels (id2label,
  // label2id, problem_type), which the caller (workbench/peft_export.h) fills for a head
  // model; AutoConfig.from_pretrained(DIR) reads it. Not written when absent.
  std::optional<nlohmann::json> model_config;
};

// The model `chain` (a model's ancestry, the model first) classifies with: the first one
// with a head, or nullptr for a language model.
const spec::Model* classifying_head(const std::vector<const spec::Model*>& chain);

// Whether PEFT can hold `model` and run it as scion does: kInvalidArgument naming what it
// cannot (and, where one can, the format that can).
Status check_peft_layout(const spec::Workspace& workspace, const spec::Model& model);

// Whether `scion import --peft` reads an adapter for `model`: check_peft_layout, a direct
// descendant of the base, and a LoRA whose tensors are scion's one to one (not GPT-2's
// fused c_attn), with a head on BERT or none on Llama.
Status check_peft_import(const spec::Workspace& workspace, const spec::Model& model);

// The PEFT name of `model`'s own parameter `scion_name` (a LoRA matrix or its head), or
// nullopt for one PEFT's layout has no one-to-one name for. REQUIRES: an imported HF base.
std::optional<std::string> peft_tensor_name(const spec::Architecture& arch,
                                           const spec::Model& model,
                                           const std::string& scion_name);

// `arch`'s modules as the registered methods' PEFT forms (spec/peft_form.h) name them;
// null for a base PEFT's layout does not cover.
std::unique_ptr<spec::PeftLayout> peft_layout(const spec::Architecture& arch);

// adapter_config.json for `model`, base_model_name_or_path the imported folder.
// REQUIRES: check_peft_layout(workspace, model) is ok.
nlohmann::json peft_config(const spec::Workspace& workspace, const spec::Model& model);

// REQUIRES: `params` are `model`'s stored parameters (its own and inherited). Errors:
// kInvalidArgument naming what PEFT's layout cannot hold.
Result<PeftAdapterFiles> peft_adapter_files(const spec::Workspace& workspace,
                                            const spec::Model& model,
                                            const LoadedParameters& params);

// Writes DIR/adapter_config.json and DIR/adapter_model.safetensors (creating DIR).
Status write_peft_adapter(Env& env, const std::filesystem::path& dir,
                          const PeftAdapterFiles& files);

}  // namespace scion::lineage
