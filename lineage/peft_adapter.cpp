#include "lineage/peft_adapter.h"

#include <fstream>
#include <set>

#include "lineage/hf_tensor_names.h"
#include "lineage/safetensors.h"

namespace scion::lineage {

namespace {

// The scion LoRA target's module in a BERT layer, and its last name component.
struct TargetModule {
  std::string path;  // below encoder.layer.N.
  std::string leaf;  // "query": unambiguous as a PEFT suffix only for q, k, v
};

TargetModule bert_module(const std::string& target) {
  if (target == "q") return {"attention.self.query", "query"};
  if (target == "k") return {"attention.self.key", "key"};
  if (target == "v") return {"attention.self.value", "value"};
  if (target == "o") return {"attention.output.dense", ""};
  if (target == "ffn_in") return {"intermediate.dense", ""};
  return {"output.dense", ""};  // ffn_out
}

std::string regex_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '.') out += '\\';
    out += c;
  }
  return out;
}

Status refuse(const spec::Model& model, const std::string& why) {
  return invalid_argument("model '" + model.name + "' cannot be exported in PEFT's layout: " +
                          why + "; export it with the default format (safetensors) instead");
}

nlohmann::json target_modules(const spec::LoraSpec& lora, const std::string& prefix) {
  bool plain = lora.layers.empty();
  for (const std::string& t : lora.targets) plain = plain && !bert_module(t).leaf.empty();
  if (plain) {
    nlohmann::json names = nlohmann::json::array();
    for (const std::string& t : lora.targets) names.push_back(bert_module(t).leaf);
    return names;
  }
  // PEFT full-matches a string against each module's whole name.
  std::string layers = "\\d+";
  if (!lora.layers.empty()) {
    layers = "(";
    for (std::size_t i = 0; i < lora.layers.size(); ++i) {
      if (i > 0) layers += '|';
      layers += std::to_string(lora.layers[i]);
    }
    layers += ")";
  }
  std::string modules = "(";
  for (std::size_t i = 0; i < lora.targets.size(); ++i) {
    if (i > 0) modules += '|';
    modules += regex_escape(bert_module(lora.targets[i]).path);
  }
  modules += ")";
  return regex_escape(prefix) + "encoder\\.layer\\." + layers + "\\." + modules;
}

}  // namespace

std::optional<std::string> peft_tensor_name(const spec::Architecture& arch,
                                           const spec::Model& model,
                                           const std::string& scion_name) {
  const std::string lora_marker = ".lora." + model.name + ".";
  if (const auto at = scion_name.find(lora_marker); at != std::string::npos) {
    auto module = hf_tensor_name(arch.hf_model_type, scion_name.substr(0, at) + ".weight");
    if (!module) return std::nullopt;
    const std::string path = module->substr(0, module->size() - std::string(".weight").size());
    const bool is_a = scion_name.ends_with(".a");
    return "base_model.model." + hf_base_model_prefix(arch.hf_model_type) + path +
           (is_a ? ".lora_A.weight" : ".lora_B.weight");
  }
  if (scion_name == "head." + model.name + ".weight") return "base_model.model.classifier.weight";
  if (scion_name == "head." + model.name + ".bias") return "base_model.model.classifier.bias";
  return std::nullopt;
}

Status check_peft_layout(const spec::Workspace& workspace, const spec::Model& model) {
  const auto chain = workspace.ancestry(model);
  const spec::Model& base = *chain.back();
  const spec::Architecture& arch = *base.architecture;
  if (arch.hf_model_type != "bert")
    return refuse(model, "its base '" + base.name +
                             "' is not an imported Hugging Face BERT folder (import: FOLDER)");
  if (chain.size() != 2)
    return refuse(model, chain.size() == 1 ? "it is a base, not an adapter"
                                           : "it descends from '" + model.from +
                                                 "', not from the base itself (its ancestors' "
                                                 "adapters are not exported as a PEFT "
                                                 "adapter; --format huggingface writes the "
                                                 "whole model with them merged)");
  const spec::Adaptation& ad = model.adaptation;
  if (ad.bitfit || ad.full || !model.unfreeze.empty())
    return invalid_argument(
        "model '" + model.name + "' cannot be exported in PEFT's layout: PEFT has no adapter for " +
        (ad.bitfit ? "BitFit (trained biases)" : "trunk weights it trains itself") +
        "; export the whole model with --format huggingface (its weights as trained, "
        "LoRA merged), which AutoModelForSequenceClassification loads");
  if (ad.bottleneck)
    return invalid_argument("model '" + model.name +
                            "' cannot be exported in PEFT's layout: PEFT has no bottleneck "
                            "adapter, and --format huggingface cannot hold one either (it is "
                            "not a change of the trunk's weights); export it with the default "
                            "format (safetensors)");
  if (ad.prefix || ad.prompt)
    return refuse(model, std::string(ad.prefix ? "prefix" : "prompt") +
                             " tuning is not exported to PEFT yet: PEFT's BERT runs it "
                             "differently from scion (" +
                             (ad.prefix ? "it shifts the text's positions by the virtual tokens"
                                        : "it classifies from the first virtual token, not "
                                          "[CLS]") +
                             "), so the probabilities would not match");
  if (!ad.lora) return refuse(model, "it has no LoRA adapter");
  if (!ad.head) return refuse(model, "it has no classification head of its own");
  if (ad.head->pooling != spec::Pooling::kCls)
    return refuse(model, "its head does not pool [CLS], which BertForSequenceClassification "
                         "does");

  return Status::ok();
}

Result<PeftAdapterFiles> peft_adapter_files(const spec::Workspace& workspace,
                                            const spec::Model& model,
                                            const LoadedParameters& params) {
  SCION_RETURN_IF_ERROR(check_peft_layout(workspace, model));
  const spec::Model& base = *workspace.ancestry(model).back();
  const spec::Architecture& arch = *base.architecture;
  PeftAdapterFiles out;
  for (const auto& [name, value] : params) {
    if (value.introduced_by != model.name) continue;
    auto peft_name = peft_tensor_name(arch, model, name);
    if (!peft_name)
      return refuse(model, "it trains '" + name + "', which PEFT's LoRA layout cannot hold");
    out.tensors.emplace_back(*peft_name, &value);
  }
  out.config = peft_config(workspace, model);
  return out;
}

nlohmann::json peft_config(const spec::Workspace& workspace, const spec::Model& model) {
  const spec::Model& base = *workspace.ancestry(model).back();
  const std::string prefix = hf_base_model_prefix(base.architecture->hf_model_type);
  const spec::LoraSpec& lora = *model.adaptation.lora;
  return {
      {"peft_type", "LORA"},
      {"task_type", "SEQ_CLS"},
      {"base_model_name_or_path", base.import_path},
      {"revision", nullptr},
      {"inference_mode", true},
      {"r", lora.rank},
      {"lora_alpha", lora.alpha},
      {"lora_dropout", lora.dropout},
      {"target_modules", target_modules(lora, prefix)},
      {"modules_to_save", {"classifier"}},
      {"bias", "none"},
      {"fan_in_fan_out", false},
      {"init_lora_weights", true},
      {"use_rslora", false},
      {"use_dora", false},
      {"layers_to_transform", nullptr},
      {"layers_pattern", nullptr},
      {"rank_pattern", nlohmann::json::object()},
      {"alpha_pattern", nlohmann::json::object()},
  };
}

Status write_peft_adapter(Env& env, const std::filesystem::path& dir,
                          const PeftAdapterFiles& files) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return io_error("cannot create '" + dir.string() + "': " + ec.message());
  std::vector<SafetensorsTensor> tensors;
  for (const auto& [name, value] : files.tensors)
    tensors.push_back({name, value->dtype, value->shape, value->bytes});
  SCION_RETURN_IF_ERROR(write_safetensors(env, dir / "adapter_model.safetensors", tensors,
                                          {{"format", "pt"}}));
  const std::string config = files.config.dump(2) + "\n";
  const std::span<const std::byte> bytes(reinterpret_cast<const std::byte*>(config.data()),
                                         config.size());
  const std::span<const std::byte> pieces[] = {bytes};
  return write_file_atomically(env, dir / "adapter_config.json", pieces);
}

}  // namespace scion::lineage
