#include "lineage/peft_ia3_modules.h"

#include <algorithm>
#include <functional>
#include <regex>
#include <vector>

#include "lineage/hf_tensor_names.h"
#include "spec/ia3_spec.h"

namespace scion::lineage {
namespace {

std::string linear_stem(const std::string& target) {
  return target == "q" || target == "k" || target == "v" || target == "o" ? "attn_" + target
                                                                          : target;
}

// Every linear of the base: its "<layer>.<target>" and the task model's module name.
std::vector<std::pair<std::string, std::string>> linear_modules(const spec::Architecture& a) {
  std::vector<std::pair<std::string, std::string>> out;
  const std::string prefix = hf_base_model_prefix(a.hf_model_type);
  for (int l = 0; l < a.layers; ++l)
    for (const char* target : spec::kLinearTargets) {
      const std::string scion = "blk." + std::to_string(l) + "." + linear_stem(target) + ".weight";
      const auto hf = hf_tensor_name(a.hf_model_type, scion);
      if (!hf || (std::string(target) == "ffn_gate" && !a.gated_ffn())) continue;
      out.push_back({std::to_string(l) + "." + target,
                     prefix + hf->substr(0, hf->size() - std::string(".weight").size())});
    }
  return out;
}

// A matcher of module names for one config value; null (with `why`) when PEFT would not
// take the value. `after_dot`: list names match at a dot boundary (target_modules).
std::function<bool(const std::string&)> matcher(const nlohmann::json& value, const char* key,
                                                bool after_dot, std::string& why) {
  if (value.is_string()) {
    try {
      auto re = std::make_shared<std::regex>(value.get<std::string>());
      return [re](const std::string& name) { return std::regex_match(name, *re); };
    } catch (const std::regex_error&) {
      why = std::string(key) + " is not a regular expression scion can read";
      return nullptr;
    }
  }
  if (value.is_null()) return [](const std::string&) { return false; };
  if (!value.is_array() ||
      !std::all_of(value.begin(), value.end(), [](const auto& v) { return v.is_string(); })) {
    why = std::string(key) + " is neither a regular expression nor a list of module names";
    return nullptr;
  }
  const auto names = value.get<std::vector<std::string>>();
  return [names, after_dot](const std::string& name) {
    return std::any_of(names.begin(), names.end(), [&](const std::string& n) {
      return after_dot ? name == n || name.ends_with("." + n) : name.ends_with(n);
    });
  };
}

}  // namespace

Ia3Modules declared_ia3_modules(const spec::Workspace& ws, const spec::Model& model) {
  const spec::Ia3Spec& ia3 = *model.adaptation.find<spec::Ia3Spec>();
  const spec::Architecture& a = ws.architecture_of(model);
  Ia3Modules out;
  for (int l = 0; l < a.layers; ++l)
    for (const char* target : spec::kLinearTargets) {
      if (!ia3.adapts(target, l)) continue;
      const bool input = std::find(ia3.feedforward.begin(), ia3.feedforward.end(), target) !=
                         ia3.feedforward.end();
      (input ? out.scaled_input : out.scaled_output).insert(std::to_string(l) + "." + target);
    }
  return out;
}

std::optional<Ia3Modules> peft_ia3_modules(const spec::Workspace& ws, const spec::Model& model,
                                           const nlohmann::json& target_modules,
                                           const nlohmann::json& feedforward_modules,
                                           std::string& why) {
  const auto targeted = matcher(target_modules, "target_modules", true, why);
  const auto feedforward = matcher(feedforward_modules, "feedforward_modules", false, why);
  if (!targeted || !feedforward) return std::nullopt;
  Ia3Modules out;
  for (const auto& [linear, module] : linear_modules(ws.architecture_of(model))) {
    if (!targeted(module)) continue;
    (feedforward(module) ? out.scaled_input : out.scaled_output).insert(linear);
  }
  return out;
}

std::string ia3_modules_text(const std::set<std::string>& modules) {
  std::string out = "{";
  for (const std::string& m : modules) {
    if (out.size() > 1) out += ", ";
    out += m;
  }
  return out + "}";
}

}  // namespace scion::lineage
