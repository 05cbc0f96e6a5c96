#include "workbench/peft_config_check.h"

#include <fmt/format.h>

#include <cmath>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>

#include "base/json_value.h"
#include "lineage/peft_adapter.h"
#include "spec/adaptation_method.h"
#include "spec/peft_form.h"

namespace scion::workbench {
namespace {

// A hub id ("sentence-transformers/all-MiniLM-L6-v2") or a path names the base's folder
// when it is that folder, or ends in the folder's name.
bool names_folder(const std::string& named, const std::filesystem::path& folder) {
  std::error_code ec;
  if (std::filesystem::equivalent(named, folder, ec)) return true;
  const std::filesystem::path n = std::filesystem::path(named).lexically_normal();
  const std::string last =
      n.has_filename() ? n.filename().string() : n.parent_path().filename().string();
  return last == folder.lexically_normal().filename().string() ||
         last == folder.lexically_normal().parent_path().filename().string();
}

// Target modules compare as sets when both are lists of names.
bool same_targets(const nlohmann::json& a, const nlohmann::json& b) {
  const auto names = [](const nlohmann::json& list) {
    std::set<std::string> out;
    for (const nlohmann::json& n : list)
      out.insert(n.is_string() ? n.get<std::string>() : n.dump());
    return out;
  };
  if (a.is_array() && b.is_array()) return names(a) == names(b);
  return a == b;
}

// The method a model declares, by its key: "lora", "ia3".
std::string declared_method(const spec::Model& model) {
  if (!model.adaptation.methods.empty()) return model.adaptation.methods.begin()->first;
  return "lora";
}

// The peft_type of every registered method with a PEFT form: "IA3".
std::string imported_peft_types() {
  std::string out;
  for (const spec::MethodBlock* block : spec::method_blocks())
    if (block->peft()) out += (out.empty() ? "" : ", ") + std::string(block->peft()->peft_type());
  return out;
}

// What every method's adapter must agree with: the base it was trained on and the layout
// of its weights.
void check_base_and_layout(const JsonValue& config, const nlohmann::json& expected,
                           const spec::Model& base, std::vector<std::string>& problems) {
  const auto field = [&](const char* key) {
    const std::optional<JsonValue> m = config.member(key);
    return m ? m->raw() : nlohmann::json();
  };
  const auto shown = [](const nlohmann::json& v) { return JsonValue::shown(v); };
  if (!field("fan_in_fan_out").is_null() && field("fan_in_fan_out") != expected["fan_in_fan_out"])
    problems.push_back(fmt::format("fan_in_fan_out is {}; {}'s linear weights are (out, in)",
                                   shown(field("fan_in_fan_out")), base.name));
  const nlohmann::json named = field("base_model_name_or_path");
  if (!named.is_string() || !names_folder(named.get<std::string>(), base.import_path))
    problems.push_back(fmt::format(
        "base_model_name_or_path is {}, which does not name '{}''s folder {}; the adapter was "
        "trained on another base",
        shown(named), base.name, base.import_path));
}

// The adapter's hyperparameters against the declaration (`expected` is the
// adapter_config.json scion would write for MODEL). Every key scion reads must hold what
// the declaration implies; keys that would change what the adapter computes and that
// scion does not run are refused rather than ignored. Each problem is one line.
void check_config(const JsonValue& config, const nlohmann::json& expected, const spec::Model& model,
                  const spec::Model& base, std::vector<std::string>& problems) {
  const auto field = [&](const char* key) {
    const std::optional<JsonValue> m = config.member(key);
    return m ? m->raw() : nlohmann::json();
  };
  const auto shown = [](const nlohmann::json& v) { return JsonValue::shown(v); };
  if (field("peft_type") != expected["peft_type"])
    problems.push_back(fmt::format(
        "peft_type is {}, but '{}' declares {} (LORA and {} adapters "
        "are imported)",
        shown(field("peft_type")), model.name, declared_method(model), imported_peft_types()));
  if (field("task_type") != expected["task_type"])
    problems.push_back(
        fmt::format("task_type is {}, but '{}' is a {} model, which PEFT runs as "
                    "task_type {}",
                    shown(field("task_type")), model.name,
                    expected["task_type"] == "SEQ_CLS"     ? "sequence classifier"
                    : expected["task_type"] == "TOKEN_CLS" ? "token classifier"
                                                           : "causal LM",
                    shown(expected["task_type"])));
  check_base_and_layout(config, expected, base, problems);
  if (expected["peft_type"] != "LORA") return;  // a registered method's: check_method_config
  if (field("r") != expected["r"])
    problems.push_back(fmt::format("r is {}, but '{}' declares rank {}", shown(field("r")),
                                   model.name, shown(expected["r"])));
  if (!field("lora_alpha").is_number() ||
      std::abs(field("lora_alpha").get<double>() - expected["lora_alpha"].get<double>()) > 1e-6)
    problems.push_back(fmt::format("lora_alpha is {}, but '{}' declares alpha {}",
                                   shown(field("lora_alpha")), model.name,
                                   shown(expected["lora_alpha"])));
  const nlohmann::json dropout = field("lora_dropout");
  const double p = dropout.is_number() ? dropout.get<double>() : 0.0;
  if (!dropout.is_null() && (!dropout.is_number() || !(p >= 0.0) || !(p < 1.0)))
    problems.push_back(fmt::format("lora_dropout is {}, expected a probability from 0 to below 1",
                                   shown(dropout)));
  else if (std::abs(p - expected["lora_dropout"].get<double>()) > 1e-6)
    problems.push_back(
        fmt::format("lora_dropout is {}, but '{}' declares dropout {}; declare "
                    "lora: {{dropout: {}}} to import it",
                    shown(dropout), model.name, shown(expected["lora_dropout"]), shown(dropout)));
  if (!same_targets(field("target_modules"), expected["target_modules"]))
    problems.push_back(fmt::format("target_modules is {}, but '{}' adapts {}",
                                   shown(field("target_modules")), model.name,
                                   shown(expected["target_modules"])));
  if ((field("use_dora") == true) != (expected["use_dora"] == true))
    problems.push_back(
        fmt::format("use_dora is {}, but '{}' declares use_dora {}; declare "
                    "lora: {{use_dora: {}}} to import it",
                    shown(field("use_dora")), model.name, shown(expected["use_dora"]),
                    shown(field("use_dora"))));
  if ((field("use_rslora") == true) != (expected["use_rslora"] == true))
    problems.push_back(
        fmt::format("use_rslora is {}, but '{}' declares use_rslora {}; declare "
                    "lora: {{use_rslora: {}}} to import it",
                    shown(field("use_rslora")), model.name, shown(expected["use_rslora"]),
                    shown(field("use_rslora"))));
  for (const char* key : {"layers_to_transform", "layers_pattern"})
    if (!field(key).is_null())
      problems.push_back(
          fmt::format("{} is {}; scion reads the adapted layers from "
                      "target_modules only (a regular expression naming them)",
                      key, shown(field(key))));
  for (const char* key : {"rank_pattern", "alpha_pattern"})
    if (!(field(key).is_null() || field(key) == nlohmann::json::object() ||
          field(key) == expected[key]))
      problems.push_back(fmt::format(
          "{} is {}; scion's LoRA has one rank and alpha for every "
          "module ('{}' declares r {} and alpha {})",
          key, shown(field(key)), model.name, shown(expected["r"]), shown(expected["lora_alpha"])));
  if (!field("bias").is_null() && field("bias") != "none")
    problems.push_back(fmt::format("bias is {}; scion's LoRA trains no biases (bias \"none\")",
                                   shown(field("bias"))));
}

// The registered methods' (spec/adaptation_method.h) own keys, checked by their PEFT forms.
void check_method_config(const JsonValue& config, const spec::Workspace& ws,
                         const spec::Model& model, std::vector<std::string>& problems) {
  const std::unique_ptr<spec::PeftLayout> layout = lineage::peft_layout(ws.architecture_of(model));
  if (!layout) return;  // check_peft_import refused the base already
  for (const auto& [key, settings] : model.adaptation.methods)
    if (const spec::MethodBlock* block = spec::find_method_block(key); block && block->peft())
      block->peft()->check_config(config.raw(), *settings, model.name, *layout, problems);
}

}  // namespace

Result<std::vector<std::string>> peft_config_problems(std::string_view text,
                                                      const std::string& file,
                                                      const spec::Workspace& ws,
                                                      const spec::Model& model) {
  auto config = parse_json_document(text, file);
  if (!config) return config.status();
  const JsonValue root(*config, file);
  SCION_RETURN_IF_ERROR(root.expect_object());
  std::vector<std::string> problems;
  check_config(root, lineage::peft_config(ws, model), model, *ws.ancestry(model).back(), problems);
  check_method_config(root, ws, model, problems);
  return problems;
}

}  // namespace scion::workbench
