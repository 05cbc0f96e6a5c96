#include "lineage/peft_adapter.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <set>

#include "lineage/dtype.h"
#include "lineage/hf_tensor_names.h"
#include "lineage/safetensors.h"
#include "spec/adaptation_method.h"
#include "spec/peft_form.h"

namespace scion::lineage {

const spec::Model* classifying_head(const std::vector<const spec::Model*>& chain) {
  for (const spec::Model* m : chain)
    if (m->adaptation.head) return m;
  return nullptr;
}

namespace {

// How an architecture's transformers models meet PEFT.
struct PeftArchitecture {
  std::string_view model_type;
  std::string_view layer_path;     // the module path before a layer's number
  std::string_view seq_cls_class;  // AutoModelForSequenceClassification's class
  std::string_view head_module;    // where scion's head goes; "" when it cannot
  std::string_view pooler_module;  // where the base's pooler goes with it; "" for none
  // AutoModelForTokenClassification's: a linear layer `classifier` on every position,
  // with no pooler; "" where scion does not export token classifiers.
  std::string_view token_cls_class;
  std::string_view token_head_module;
};

// Prefix tuning: PEFT passes the virtual tokens as past_key_values, and transformers then
// numbers the text's positions after them (BertEmbeddings, RobertaEmbeddings, GPT2Model;
// Llama's rotary positions likewise), which is what scion runs on imported bases
// (spec::prefix_shifts_positions).
constexpr PeftArchitecture kArchitectures[] = {
    // BertForSequenceClassification: classifier(pooler(h[:, 0])).
    {"bert", "encoder.layer.", "BertForSequenceClassification", "classifier", "",
     "BertForTokenClassification", "classifier"},
    // RobertaClassificationHead: out_proj(tanh(dense(h[:, 0]))), scion's pooler + head.
    {"roberta", "encoder.layer.", "RobertaForSequenceClassification", "classifier.out_proj",
     "classifier.dense", "RobertaForTokenClassification", "classifier"},
    // GPT2ForSequenceClassification, LlamaForSequenceClassification and the other
    // Llama-shaped decoders': score, no bias.
    {"gpt2", "h.", "GPT2ForSequenceClassification", "", "", "", ""},
    {"llama", "model.layers.", "LlamaForSequenceClassification", "", "", "", ""},
    {"qwen2", "model.layers.", "Qwen2ForSequenceClassification", "", "", "", ""},
    {"mistral", "model.layers.", "MistralForSequenceClassification", "", "", "", ""},
    {"phi3", "model.layers.", "Phi3ForSequenceClassification", "", "", "", ""},
};

const PeftArchitecture* peft_architecture(std::string_view model_type) {
  for (const PeftArchitecture& a : kArchitectures)
    if (a.model_type == model_type) return &a;
  return nullptr;
}

std::string linear_stem(const std::string& target) {
  return target == "q" || target == "k" || target == "v" || target == "o" ? "attn_" + target
                                                                          : target;
}

// A linear layer's module path below its layer ("attention.self.query"), "" when the
// architecture has no such layer.
std::string module_below_layer(const PeftArchitecture& arch, const std::string& target) {
  auto name = hf_tensor_name(arch.model_type, "blk.0." + linear_stem(target) + ".weight");
  if (!name) return "";
  const std::string head = std::string(arch.layer_path) + "0.";
  return name->substr(head.size(), name->size() - head.size() - std::string(".weight").size());
}

bool ends_with_component(const std::string& path, const std::string& suffix) {
  return path == suffix || path.ends_with("." + suffix);
}

// The shortest trailing part of `path` that no other linear module of a layer ends with
// (PEFT matches a target name against a module name's end), or "" when none is unique.
std::string unique_suffix(const PeftArchitecture& arch, const std::string& path) {
  std::vector<std::string> others;
  for (const char* t : spec::kLinearTargets)
    if (const std::string p = module_below_layer(arch, t); !p.empty() && p != path)
      others.push_back(p);
  // Candidates from the last component outwards: "query", then "self.query", ...
  for (std::size_t start = path.rfind('.');; start = path.rfind('.', start - 1)) {
    const std::string candidate = start == std::string::npos ? path : path.substr(start + 1);
    if (std::none_of(others.begin(), others.end(),
                     [&](const std::string& o) { return ends_with_component(o, candidate); }))
      return candidate;
    if (start == std::string::npos || start == 0) return "";
  }
}

std::string regex_escape(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (c == '.') out += '\\';
    out += c;
  }
  return out;
}

// A regular expression that PEFT full-matches against exactly the task model's modules
// `modules` (paths below a layer) of `layers` (empty: every layer).
std::string modules_regex(const PeftArchitecture& arch, const std::vector<std::string>& modules,
                          const std::vector<int>& chosen_layers, const std::string& prefix) {
  std::string layers = "\\d+";
  if (!chosen_layers.empty()) {
    layers = "(";
    for (std::size_t i = 0; i < chosen_layers.size(); ++i) {
      if (i > 0) layers += '|';  // appended apart: GCC 12 -O3 misreads "|" + string as overlap
      layers += std::to_string(chosen_layers[i]);
    }
    layers += ")";
  }
  std::string alternatives = "(";
  for (std::size_t i = 0; i < modules.size(); ++i) {
    if (i > 0) alternatives += '|';
    alternatives += regex_escape(modules[i]);
  }
  alternatives += ")";
  return regex_escape(prefix) + regex_escape(arch.layer_path) + layers + "\\." + alternatives;
}

Status refuse(const spec::Model& model, const std::string& why) {
  return invalid_argument("model '" + model.name + "' cannot be exported in PEFT's layout: " + why +
                          "; export it with the default format (safetensors) instead");
}

std::vector<float> as_float32(const LoadedParameter& p) {
  if (p.dtype == DType::kF32) {
    std::vector<float> out(p.bytes.size() / sizeof(float));
    // An empty tensor's bytes and vector may both be null: memcpy must not see them.
    if (!out.empty()) std::memcpy(out.data(), p.bytes.data(), out.size() * sizeof(float));
    return out;
  }
  return to_float32(p.dtype, p.bytes);
}

const PeftArchitecture& architecture_of(const spec::Workspace& ws, const spec::Model& model) {
  return *peft_architecture(ws.architecture_of(model).hf_model_type);
}

bool tags_words(const spec::Model& head_owner) {
  return head_owner.adaptation.head->task == spec::HeadTask::kTokenClassification;
}

// The task model's module that holds the head `owner` introduced, and its class.
std::string_view head_module(const PeftArchitecture& arch, const spec::Model& owner) {
  return tags_words(owner) ? arch.token_head_module : arch.head_module;
}
std::string_view task_class(const PeftArchitecture& arch, const spec::Model& owner) {
  return tags_words(owner) ? arch.token_cls_class : arch.seq_cls_class;
}

bool is_causal_lm(const spec::Workspace& ws, const spec::Model& model) {
  return !classifying_head(ws.ancestry(model)) &&
         ws.objective_of(model) == spec::Objective::kCausalLm;
}

Status check_prefix(const spec::Model& model, const spec::Architecture& a) {
  const spec::PrefixSpec& prefix = *model.adaptation.prefix;
  if (a.key_value_heads() != a.heads)
    return refuse(model, "scion's prefix holds keys and values for each of the " +
                             std::to_string(a.heads) +
                             " query heads, but with grouped-query "
                             "attention the cache PEFT's prefix enters holds one per key/value "
                             "head (" +
                             std::to_string(a.key_value_heads()) + ")");
  if (!prefix.layers.empty() && static_cast<int>(prefix.layers.size()) != a.layers)
    return refuse(model,
                  "its prefix covers some layers only, and PEFT's prefix covers every "
                  "layer (a zero key still takes attention weight)");
  return Status::ok();
}

// A descendant of a descendant exports over a base folder with its ancestors merged into
// the weights (workbench/peft_export.h): each ancestor's adaptation must be a change of
// the trunk's weights or a head.
Status check_mergeable_ancestors(const spec::Model& model,
                                 const std::vector<const spec::Model*>& chain) {
  for (std::size_t i = 1; i + 1 < chain.size(); ++i) {
    const spec::Adaptation& ad = chain[i]->adaptation;
    const std::string_view unfoldable = spec::unfoldable_adapter(ad);
    if (!ad.prefix && !ad.prompt && unfoldable.empty()) continue;
    return refuse(model, "its ancestor '" + chain[i]->name + "' has " +
                             (ad.prefix   ? "prefix tuning"
                              : ad.prompt ? "prompt tuning"
                                          : "a " + std::string(unfoldable)) +
                             ", which cannot be merged into the weights of the base folder "
                             "that a PEFT adapter of a descendant of a descendant loads over "
                             "(PEFT runs one adapter over a plain transformers model)");
  }
  return Status::ok();
}

// A base's modules as the registered methods' PEFT forms (spec/peft_form.h) name them.
class HfPeftLayout final : public spec::PeftLayout {
 public:
  HfPeftLayout(const spec::Architecture& a, const PeftArchitecture& arch)
      : a_(a), arch_(arch), prefix_(hf_base_model_prefix(a.hf_model_type)) {}

  const spec::Architecture& architecture() const override { return a_; }

  std::optional<std::string> linear_module(int layer, std::string_view target) const override {
    if (target == "ffn_gate" && !a_.gated_ffn()) return std::nullopt;
    const auto hf =
        hf_tensor_name(a_.hf_model_type, "blk." + std::to_string(layer) + "." +
                                             linear_stem(std::string(target)) + ".weight");
    if (!hf) return std::nullopt;
    return prefix_ + hf->substr(0, hf->size() - std::string(".weight").size());
  }

  std::string linears_regex(const std::vector<std::string>& targets,
                            const std::vector<int>& layers) const override {
    std::vector<std::string> modules;
    for (const std::string& t : targets) modules.push_back(module_below_layer(arch_, t));
    return modules_regex(arch_, modules, layers, prefix_);
  }

  std::vector<std::string> module_targets(std::string_view target) const override {
    const auto hf =
        hf_tensor_name(a_.hf_model_type, "blk.0." + linear_stem(std::string(target)) + ".weight");
    const std::vector<std::string> fused =
        hf ? map_hf_tensor(a_.hf_model_type, *hf).fused : std::vector<std::string>();
    if (fused.empty()) return {std::string(target)};
    std::vector<std::string> targets;  // blk.0.attn_q.weight is "q"
    for (const std::string& part : fused) {
      std::string stem = part.substr(6, part.size() - 6 - std::string(".weight").size());
      targets.push_back(stem.starts_with("attn_") ? stem.substr(5) : stem);
    }
    return targets;
  }

  std::string module_suffix(std::string_view target) const override {
    return unique_suffix(arch_, module_below_layer(arch_, std::string(target)));
  }

 private:
  const spec::Architecture& a_;
  const PeftArchitecture& arch_;
  std::string prefix_;
};

// The model's own methods that register a PEFT form, with their settings.
std::vector<std::pair<const spec::PeftForm*, const spec::MethodSettings*>> peft_forms_of(
    const spec::Model& model) {
  std::vector<std::pair<const spec::PeftForm*, const spec::MethodSettings*>> out;
  for (const auto& [key, settings] : model.adaptation.methods)
    if (const spec::MethodBlock* block = spec::find_method_block(key); block && block->peft())
      out.push_back({block->peft(), settings.get()});
  return out;
}

// The methods `scion import --peft` reads, those with a PEFT form: "lora, ia3".
std::string imported_methods() {
  std::string out;
  for (const spec::MethodBlock* block : spec::method_blocks())
    if (block->peft()) out += (out.empty() ? "" : ", ") + std::string(block->key());
  return out;
}

// The methods a PEFT adapter can be: "lora, ia3, prefix, prompt".
std::string peft_methods() { return imported_methods() + ", prefix, prompt"; }

}  // namespace

std::unique_ptr<spec::PeftLayout> peft_layout(const spec::Architecture& arch) {
  const PeftArchitecture* peft = peft_architecture(arch.hf_model_type);
  if (!peft) return nullptr;
  return std::make_unique<HfPeftLayout>(arch, *peft);
}

Status check_peft_layout(const spec::Workspace& workspace, const spec::Model& model) {
  const auto chain = workspace.ancestry(model);
  const spec::Model& base = *chain.back();
  const spec::Architecture& a = *base.architecture;
  const PeftArchitecture* arch = peft_architecture(a.hf_model_type);
  if (!arch)
    return refuse(model,
                  "its base '" + base.name +
                      "' is not an imported Hugging Face BERT, RoBERTa, GPT-2, Llama, Qwen2, "
                      "Mistral or Phi-3 folder (import: FOLDER)");
  if (chain.size() == 1) return refuse(model, "it is a base, not an adapter");
  SCION_RETURN_IF_ERROR(check_mergeable_ancestors(model, chain));
  const spec::Adaptation& ad = model.adaptation;
  if (ad.bitfit || ad.full || !model.unfreeze.empty())
    return invalid_argument(
        "model '" + model.name + "' cannot be exported in PEFT's layout: PEFT has no adapter for " +
        (ad.bitfit ? "BitFit (trained biases)" : "trunk weights it trains itself") +
        "; export the whole model with --format huggingface (its weights as trained, "
        "LoRA merged), which AutoModelForSequenceClassification loads");
  if (const std::string_view unfoldable = spec::unfoldable_adapter(ad); !unfoldable.empty())
    return invalid_argument("model '" + model.name +
                            "' cannot be exported in PEFT's layout: PEFT has no " +
                            std::string(unfoldable) +
                            ", and --format huggingface cannot hold one either (it is "
                            "not a change of the trunk's weights); export it with the default "
                            "format (safetensors)");
  // The registered methods (spec/adaptation_method.h) each need a PEFT form.
  for (const auto& [key, settings] : ad.methods)
    if (const spec::MethodBlock* block = spec::find_method_block(key); !block || !block->peft())
      return refuse(model, "PEFT has no adapter for its " + key +
                               " (export it with the default format, safetensors)");
  const int methods =
      static_cast<int>(ad.methods.size()) + (ad.prefix ? 1 : 0) + (ad.prompt ? 1 : 0);
  if (methods == 0)
    return refuse(model, "it has no adapter of its own that PEFT holds (" + peft_methods() + ")");
  if (methods > 1)
    return refuse(
        model, "it combines methods (of " + peft_methods() + "), and a PEFT adapter is one method");
  for (const auto& [form, settings] : peft_forms_of(model))
    if (const std::string why = form->export_refusal(*settings, a); !why.empty())
      return refuse(model, why);
  const spec::Model* head = classifying_head(chain);
  if (head && tags_words(*head)) {
    if (arch->token_head_module.empty())
      return refuse(model, "scion exports token classifiers of BERT and RoBERTa bases (" +
                               a.hf_model_type + " has no such row)");
    if (ad.prompt)
      return refuse(model,
                    "PEFT prepends prompt tuning's virtual tokens to the words, so its "
                    "token classifier tags them too and shifts every word's position");
  } else if (head) {
    if (arch->head_module.empty())
      return refuse(model, std::string(arch->seq_cls_class) +
                               "'s score layer has no bias and scion's classification head has "
                               "one, so no PEFT adapter gives its probabilities (causal-LM "
                               "descendants export as CAUSAL_LM)");
    if (head->adaptation.head->pooling != spec::Pooling::kCls)
      return refuse(model, "the head it classifies with (" + head->name +
                               "'s) does not pool [CLS], which " +
                               std::string(arch->seq_cls_class) + " does");
  } else if (!is_causal_lm(workspace, model)) {
    return refuse(model,
                  "it is a masked language model, and PEFT has no masked-LM task type "
                  "(classifiers export as SEQ_CLS, causal LMs on GPT-2 and the Llama-shaped "
                  "decoders as CAUSAL_LM)");
  }
  if (ad.prefix) SCION_RETURN_IF_ERROR(check_prefix(model, a));
  if (ad.prompt && head && !tags_words(*head))
    return refuse(model, "PEFT prepends prompt tuning's virtual tokens before [CLS], so " +
                             std::string(arch->seq_cls_class) +
                             " classifies from the first virtual token, while scion's head "
                             "pools the text's [CLS] after them");
  return Status::ok();
}

Status check_peft_import(const spec::Workspace& workspace, const spec::Model& model) {
  SCION_RETURN_IF_ERROR(check_peft_layout(workspace, model));
  // The adapter of a descendant of a descendant runs over a merged base folder, which no
  // stored parent's parameters are.
  if (workspace.ancestry(model).size() != 2)
    return invalid_argument("model '" + model.name + "' descends from '" + model.from +
                            "', not from the base itself: scion import --peft reads adapters "
                            "of the base's direct descendants; declare MODEL with `from:` the "
                            "base");
  const std::string& type = workspace.architecture_of(model).hf_model_type;
  const bool readable_base =
      type == "bert" || type == "llama" || type == "qwen2" || type == "mistral";
  if (peft_forms_of(model).empty() || !readable_base)
    return invalid_argument(
        "model '" + model.name + "': scion import --peft reads adapters of " + imported_methods() +
        " on BERT (model_type bert) and Llama, Qwen2 and Mistral bases; declare such a "
        "descendant of such a base, or import the adapter's parameters as safetensors");
  return Status::ok();
}

std::optional<std::string> peft_tensor_name(const spec::Architecture& arch,
                                            const spec::Model& model,
                                            const std::string& scion_name) {
  const PeftArchitecture* peft = peft_architecture(arch.hf_model_type);
  // The registered methods' parameters, named by their PEFT forms below the tuner's root.
  if (peft)
    for (const auto& [form, settings] : peft_forms_of(model))
      if (auto key = form->tensor_key(scion_name, model.name, HfPeftLayout(arch, *peft)))
        return "base_model.model." + *key;
  if (!peft || !model.adaptation.head || head_module(*peft, model).empty()) return std::nullopt;
  for (const char* part : {"weight", "bias"})
    if (scion_name == "head." + model.name + "." + part)
      return "base_model.model." + std::string(head_module(*peft, model)) + "." + part;
  return std::nullopt;
}

namespace {

// Prefix or prompt tuning's keys of adapter_config.json. PEFT's prompt-learning configs
// have no modules_to_save: PeftModelForSequenceClassification adds classifier and score
// itself.
void add_prompt_learning_config(const spec::Architecture& a, const spec::Adaptation& ad,
                                nlohmann::json& config) {
  config["peft_type"] = ad.prefix ? "PREFIX_TUNING" : "PROMPT_TUNING";
  config["num_virtual_tokens"] = ad.prefix ? ad.prefix->virtual_tokens : ad.prompt->virtual_tokens;
  config["token_dim"] = a.width;
  config["num_transformer_submodules"] = 1;
  config["num_attention_heads"] = a.heads;
  config["num_layers"] = a.layers;
  if (ad.prefix) {
    config["encoder_hidden_size"] = a.width;
    config["prefix_projection"] = false;  // the stored values are the MLP's output
  } else {
    config["prompt_tuning_init"] = "RANDOM";  // the values come from the file
    config["prompt_tuning_init_text"] = nullptr;
    config["tokenizer_name_or_path"] = nullptr;
    config["tokenizer_kwargs"] = nullptr;
  }
}

}  // namespace

nlohmann::json peft_config(const spec::Workspace& workspace, const spec::Model& model) {
  const spec::Model& base = *workspace.ancestry(model).back();
  const spec::Architecture& a = *base.architecture;
  const PeftArchitecture& arch = architecture_of(workspace, model);
  const spec::Adaptation& ad = model.adaptation;
  const spec::Model* owner = classifying_head(workspace.ancestry(model));
  nlohmann::json config = {
      {"base_model_name_or_path", base.import_path},
      {"revision", nullptr},
      {"task_type", !owner               ? "CAUSAL_LM"
                    : tags_words(*owner) ? "TOKEN_CLS"
                                         : "SEQ_CLS"},
      {"inference_mode", true},
  };
  if (ad.prefix || ad.prompt) {
    add_prompt_learning_config(a, ad, config);
    return config;
  }
  config["modules_to_save"] = owner ? nlohmann::json({"classifier"}) : nlohmann::json();
  config["fan_in_fan_out"] = a.hf_model_type == "gpt2";  // Conv1D weights are (in, out)
  // check_peft_layout let one method through, with a PEFT form.
  if (const auto forms = peft_forms_of(model); !forms.empty())
    forms.front().first->add_config(*forms.front().second, HfPeftLayout(a, arch), config);
  return config;
}

namespace {

// Prefix tuning's past_key_values, one row per virtual token: [k_0 | v_0 | k_1 | v_1 ...].
PeftTensor prefix_tensor(const spec::Architecture& a, const spec::Model& model,
                         const LoadedParameters& params) {
  const std::int64_t P = model.adaptation.prefix->virtual_tokens, C = a.width, L = a.layers;
  PeftTensor t{"prompt_embeddings", {P, 2 * L * C}, std::vector<float>(P * 2 * L * C)};
  for (std::int64_t l = 0; l < L; ++l)
    for (int which = 0; which < 2; ++which) {
      const std::vector<float> kv = as_float32(params.at(
          "blk." + std::to_string(l) + ".prefix." + model.name + (which ? ".values" : ".keys")));
      for (std::int64_t p = 0; p < P; ++p)
        std::copy_n(kv.begin() + p * C, C, t.values.begin() + p * 2 * L * C + (2 * l + which) * C);
    }
  return t;
}

}  // namespace

Result<PeftAdapterFiles> peft_adapter_files(const spec::Workspace& workspace,
                                            const spec::Model& model,
                                            const LoadedParameters& params) {
  SCION_RETURN_IF_ERROR(check_peft_layout(workspace, model));
  const spec::Architecture& a = workspace.architecture_of(model);
  const PeftArchitecture& arch = architecture_of(workspace, model);
  const spec::Adaptation& ad = model.adaptation;
  PeftAdapterFiles out;
  // The registered methods' parameters of the model's own, as their PEFT forms write them.
  const auto forms = peft_forms_of(model);
  const HfPeftLayout layout(a, arch);
  for (const auto& [form, settings] : forms) {
    std::vector<PeftTensor> own;
    for (const auto& [name, value] : params)
      if (form->tensor_key(name, model.name, layout))
        own.push_back({name, value.shape, as_float32(value)});
    for (PeftTensor& t : form->tensors(own, model.name, layout))
      out.tensors.push_back(
          {"base_model.model." + t.name, std::move(t.shape), std::move(t.values)});
  }
  if (ad.prefix) out.tensors.push_back(prefix_tensor(a, model, params));
  if (ad.prompt) {
    const LoadedParameter& p = params.at("prompt." + model.name + ".embeddings");
    out.tensors.push_back({"prompt_embeddings", p.shape, as_float32(p)});
  }
  // PEFT's SEQ_CLS model always wraps the classifier as a module to save: it holds the head
  // the model classifies with, its own or (a descendant of a descendant) its nearest
  // ancestor's. LoRA's tuner wraps the transformers model (base_model.model.*); prompt
  // learning holds it directly (base_model.*), as get_peft_model_state_dict writes either.
  if (const spec::Model* owner = classifying_head(workspace.ancestry(model))) {
    const bool wraps_model = !forms.empty();
    const std::string root = wraps_model ? "base_model.model." : "base_model.";
    for (const char* part : {"weight", "bias"}) {
      const LoadedParameter& head = params.at("head." + owner->name + "." + part);
      out.tensors.push_back({root + std::string(head_module(arch, *owner)) + "." + part, head.shape,
                             as_float32(head)});
      if (arch.pooler_module.empty() || tags_words(*owner)) continue;
      const LoadedParameter& pooler = params.at(std::string("pooler.") + part);
      out.tensors.push_back(
          {root + std::string(arch.pooler_module) + "." + part, pooler.shape, as_float32(pooler)});
    }
  }
  out.config = peft_config(workspace, model);
  if (const spec::Model* owner = classifying_head(workspace.ancestry(model)))
    out.task_class = std::string(task_class(arch, *owner));
  return out;
}

Status write_peft_adapter(Env& env, const std::filesystem::path& dir,
                          const PeftAdapterFiles& files) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return io_error("cannot create '" + dir.string() + "': " + ec.message());
  std::vector<SafetensorsTensor> tensors;
  for (const PeftTensor& t : files.tensors)
    tensors.push_back(
        {t.name, DType::kF32, t.shape, std::as_bytes(std::span<const float>(t.values))});
  SCION_RETURN_IF_ERROR(
      write_safetensors(env, dir / "adapter_model.safetensors", tensors, {{"format", "pt"}}));
  const auto write_json = [&](const nlohmann::json& json, const char* name) {
    const std::string text = json.dump(2) + "\n";
    const std::span<const std::byte> bytes(reinterpret_cast<const std::byte*>(text.data()),
                                           text.size());
    const std::span<const std::byte> pieces[] = {bytes};
    return write_file_atomically(env, dir / name, pieces);
  };
  if (files.model_config) SCION_RETURN_IF_ERROR(write_json(*files.model_config, "config.json"));
  return write_json(files.config, "adapter_config.json");
}

}  // namespace scion::lineage
