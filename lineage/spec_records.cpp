#include "lineage/spec_records.h"

#include <fmt/format.h>

#include <charconv>
#include <cmath>
#include <cstdlib>
#include <map>
#include <vector>

namespace scion::lineage {

namespace {

using nlohmann::json;

const char* name_of(spec::BottleneckPlacement p) {
  switch (p) {
    case spec::BottleneckPlacement::kAfterAttention:
      return "after_attention";
    case spec::BottleneckPlacement::kAfterFfn:
      return "after_ffn";
    case spec::BottleneckPlacement::kBoth:
      return "both";
  }
  return "?";
}

const char* name_of(spec::PromptInit init) {
  switch (init) {
    case spec::PromptInit::kRandom:
      return "random";
    case spec::PromptInit::kText:
      return "text";
    case spec::PromptInit::kVocab:
      return "vocab";
  }
  return "?";
}

const char* name_of(spec::Pooling pooling) {
  switch (pooling) {
    case spec::Pooling::kCls:
      return "cls";
    case spec::Pooling::kMean:
      return "mean";
    case spec::Pooling::kLast:
      return "last";
  }
  return "?";
}

// The canonical recipe stores each enum as its declaration index (spec/workspace.h);
// recipe hashes depend on it, so these orders never change. Keyed by the field's path.
const std::map<std::string, std::vector<const char*>>& enum_words() {
  static const std::map<std::string, std::vector<const char*>> words = {
      {"train.objective", {"mlm", "clm", "classification"}},
      {"train.optimizer.type", {"adamw", "sgd"}},
      {"train.schedule.type", {"constant", "linear", "cosine"}},
      {"train.data.format", {"jsonl", "csv", "tsv", "text"}},
      {"adapt.prompt.init", {"random", "text", "vocab"}},
      {"adapt.bottleneck.placement", {"attention", "ffn", "both"}},
      {"adapt.head.pooling", {"cls", "mean", "last"}},
      {"architecture.tokenizer.kind", {"byte", "wordpiece", "bpe"}},
  };
  return words;
}

// Spec values are floats; the recipe holds them as doubles. A double that is exactly a
// float prints as that float's shortest form.
json as_written(double value) {
  const auto single = static_cast<float>(value);
  if (!std::isfinite(value) || static_cast<double>(single) != value) return value;
  return std::strtod(fmt::format("{}", single).c_str(), nullptr);
}

json in_spec_words(const json& value, const std::string& path) {
  if (value.is_object()) {
    json out = json::object();
    for (const auto& [key, child] : value.items())
      out[key] = in_spec_words(child, path.empty() ? key : path + "." + key);
    return out;
  }
  if (value.is_array()) {
    json out = json::array();
    for (const json& item : value) out.push_back(in_spec_words(item, path));
    return out;
  }
  if (auto words = enum_words().find(path); words != enum_words().end() && value.is_number_integer()) {
    const auto index = value.get<std::int64_t>();
    if (index >= 0 && index < static_cast<std::int64_t>(words->second.size())) return words->second[index];
  }
  if (path == "train.seed" && value.is_string()) {
    const std::string& text = value.get_ref<const std::string&>();
    std::uint64_t seed = 0;
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), seed);
    if (error == std::errc() && end == text.data() + text.size()) return seed;
  }
  if (value.is_number_float()) return as_written(value.get<double>());
  return value;
}

}  // namespace

json recipe_in_spec_words(const json& canonical) { return in_spec_words(canonical, ""); }

json adaptation_json(const spec::Adaptation& a) {
  json out = json::object();
  if (a.lora) {
    out["lora"] = {{"rank", a.lora->rank},
                   {"alpha", a.lora->alpha},
                   {"dropout", a.lora->dropout},
                   {"targets", a.lora->targets},
                   {"layers", a.lora->layers}};
    if (a.lora->use_rslora) out["lora"]["use_rslora"] = true;
    if (a.lora->use_dora) out["lora"]["use_dora"] = true;
  }
  if (a.ia3) out["ia3"] = spec::ia3_json(*a.ia3);
  if (a.prefix) {
    out["prefix"] = {{"virtual_tokens", a.prefix->virtual_tokens},
                     {"layers", a.prefix->layers},
                     {"reparam_hidden", a.prefix->reparam_hidden}};
  }
  if (a.prompt) {
    out["prompt"] = {{"virtual_tokens", a.prompt->virtual_tokens},
                     {"init", name_of(a.prompt->init)},
                     {"init_text", a.prompt->init_text}};
  }
  if (a.bottleneck) {
    out["bottleneck"] = {{"reduction", a.bottleneck->reduction},
                         {"placement", name_of(a.bottleneck->placement)},
                         {"layers", a.bottleneck->layers}};
  }
  if (a.head) {
    out["head"] = {{"task", spec::head_task_name(a.head->task)},
                   {"labels", a.head->labels},
                   {"pooling", name_of(a.head->pooling)}};
    if (a.head->threshold) out["head"]["threshold"] = *a.head->threshold;
  }
  if (a.bitfit) out["bitfit"] = json::object();
  if (a.full) out["full"] = json::object();
  return out;
}

json architecture_json(const spec::Architecture& a) {
  return {{"kind", a.kind == spec::ArchitectureKind::kEncoder ? "encoder" : "decoder"},
          {"layers", a.layers},
          {"width", a.width},
          {"heads", a.heads},
          {"ffn_width", a.ffn_width},
          {"vocab_size", a.vocab_size},
          {"max_length", a.max_length},
          {"norm", a.norm == spec::NormPlacement::kPre ? "pre" : "post"},
          {"dropout", a.dropout},
          {"tie_embeddings", a.tie_embeddings}};
}

ModelRecord model_record_for(const spec::Workspace& workspace, const spec::Model& model) {
  ModelRecord record;
  record.name = model.name;
  record.parent = model.from;
  record.recipe_hash = model.recipe_hash;
  record.adaptation = adaptation_json(model.adaptation);
  record.architecture = architecture_json(workspace.architecture_of(model));
  if (model.training)
    if (const spec::Dataset* data = workspace.find_dataset(model.training->dataset))
      record.data_digests.push_back(data->digest);
  return record;
}

std::string method_label(const json& adaptation) {
  if (!adaptation.is_object() || adaptation.empty()) return "base";
  std::string label;
  for (const auto& [method, params] : adaptation.items()) {
    if (!label.empty()) label += "+";
    label += method;
    if (method == "lora" && params.contains("rank")) label += " r=" + params["rank"].dump();
    if ((method == "prefix" || method == "prompt") && params.contains("virtual_tokens")) {
      label += " p=" + params["virtual_tokens"].dump();
    }
  }
  return label;
}

}  // namespace scion::lineage
