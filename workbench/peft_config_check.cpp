#include "workbench/peft_config_check.h"

#include <fmt/format.h>

#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>

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

// The method a model declares, by its key: "lora", "ia3" (check_peft_import let one
// registered method through).
std::string declared_method(const spec::Model& model) {
  return model.adaptation.methods.empty() ? "none" : model.adaptation.methods.begin()->first;
}

// The peft_type of every registered method with a PEFT form: "LORA and IA3".
std::string imported_peft_types() {
  std::vector<std::string> types;
  for (const spec::MethodBlock* block : spec::method_blocks())
    if (block->peft()) types.emplace_back(block->peft()->peft_type());
  std::string out;
  for (std::size_t i = 0; i < types.size(); ++i)
    out += (i == 0 ? "" : i + 1 == types.size() ? " and " : ", ") + types[i];
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

// What every adapter is checked for against the declaration (`expected` is the
// adapter_config.json scion would write for MODEL): its peft_type, task_type, base and
// weight layout; the method's own keys are its PEFT form's to check (check_method_config).
// Each problem is one line.
void check_config(const JsonValue& config, const nlohmann::json& expected, const spec::Model& model,
                  const spec::Model& base, std::vector<std::string>& problems) {
  const auto field = [&](const char* key) {
    const std::optional<JsonValue> m = config.member(key);
    return m ? m->raw() : nlohmann::json();
  };
  const auto shown = [](const nlohmann::json& v) { return JsonValue::shown(v); };
  if (field("peft_type") != expected["peft_type"])
    problems.push_back(fmt::format(
        "peft_type is {}, but '{}' declares {} ({} adapters "
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
