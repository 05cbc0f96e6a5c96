#include "runtime/adapters/ia3/ia3_peft.h"

#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <memory>
#include <regex>
#include <set>

#include "base/json_value.h"
#include "runtime/adapters/ia3/ia3_parameters.h"
#include "runtime/adapters/ia3/ia3_spec.h"

namespace scion::spec {
namespace {

// What an (IA)³ scales, each linear as "<layer>.<target>" ("0.k", "1.ffn_out").
struct ScaledLinears {
  std::set<std::string> outputs;
  std::set<std::string> inputs;
  bool operator==(const ScaledLinears&) const = default;
};

bool on_input(const Ia3Spec& ia3, std::string_view target) {
  return std::find(ia3.feedforward.begin(), ia3.feedforward.end(), target) != ia3.feedforward.end();
}

ScaledLinears declared(const Ia3Spec& ia3, const Architecture& a) {
  ScaledLinears out;
  for (int l = 0; l < a.layers; ++l)
    for (const char* target : kLinearTargets)
      if (ia3.adapts(target, l))
        (on_input(ia3, target) ? out.inputs : out.outputs).insert(std::to_string(l) + "." + target);
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

// What a config's target_modules and feedforward_modules select on the base, as PEFT
// reads them; nullopt (with `why`) for a value PEFT would not take.
std::optional<ScaledLinears> selected(const nlohmann::json& target_modules,
                                      const nlohmann::json& feedforward_modules,
                                      const PeftLayout& layout, std::string& why) {
  const auto targeted = matcher(target_modules, "target_modules", true, why);
  const auto feedforward = matcher(feedforward_modules, "feedforward_modules", false, why);
  if (!targeted || !feedforward) return std::nullopt;
  ScaledLinears out;
  for (int l = 0; l < layout.architecture().layers; ++l)
    for (const char* target : kLinearTargets) {
      const std::optional<std::string> module = layout.linear_module(l, target);
      if (!module || !targeted(*module)) continue;
      (feedforward(*module) ? out.inputs : out.outputs).insert(std::to_string(l) + "." + target);
    }
  return out;
}

std::string listed(const std::set<std::string>& linears) {  // "{0.k, 0.v}"
  std::string out = "{";
  for (const std::string& m : linears) {
    if (out.size() > 1) out += ", ";
    out += m;
  }
  return out + "}";
}

class Ia3PeftForm final : public PeftForm {
 public:
  std::string_view peft_type() const override { return "IA3"; }

  std::string export_refusal(const MethodSettings&, const Architecture& arch) const override {
    const char* fused = arch.hf_model_type == "gpt2"
                            ? "GPT-2 holds q, k and v in one Conv1D (c_attn)"
                        : arch.hf_model_type == "phi3" ? "Phi-3 holds q, k and v in one qkv_proj "
                                                         "and the gate and up in one gate_up_proj"
                                                       : nullptr;
    if (!fused) return "";
    return std::string(fused) +
           ", and scion exports (IA)³ on modules of their own (BERT, RoBERTa, Llama); "
           "--format huggingface merges (IA)³ into the weights";
  }

  // blk.N.<stem>.ia3.<model>.{out,in} (ia3_parameters.h) is <module>.ia3_l.
  std::optional<std::string> tensor_key(const std::string& name, const std::string& model,
                                        const PeftLayout& layout) const override {
    const auto p = linear_parameter(name, runtime::kIa3Marker + model + ".");
    if (!p || (p->rest != "out" && p->rest != "in")) return std::nullopt;
    const std::optional<std::string> module = layout.linear_module(p->layer, p->target);
    if (!module) return std::nullopt;
    return *module + ".ia3_l";
  }

  // target_modules (every scaled linear) and feedforward_modules (those scaled on the
  // input), always as regular expressions: PEFT matches a list of feed-forward names by a
  // plain string end, so "output.dense" would take BERT's attention.output.dense too. No
  // feed-forward module is an empty list (PEFT: none).
  void add_config(const MethodSettings& settings, const PeftLayout& layout,
                  nlohmann::json& config) const override {
    const auto& ia3 = dynamic_cast<const Ia3Spec&>(settings);
    std::vector<std::string> all, feedforward;
    for (const char* target : kLinearTargets) {
      const bool input = on_input(ia3, target);
      if (!input && std::find(ia3.targets.begin(), ia3.targets.end(), target) == ia3.targets.end())
        continue;
      all.push_back(target);
      if (input) feedforward.push_back(target);
    }
    config["peft_type"] = "IA3";
    config["target_modules"] = layout.linears_regex(all, ia3.layers);
    config["feedforward_modules"] =
        feedforward.empty() ? nlohmann::json::array()
                            : nlohmann::json(layout.linears_regex(feedforward, ia3.layers));
    config["init_ia3_weights"] = true;
  }

  // The adapter scales what the declaration does: the modules its target_modules and
  // feedforward_modules select as PEFT reads them (lists or regular expressions),
  // compared as sets of (layer, linear) with the declaration's outputs and inputs.
  void check_config(const nlohmann::json& config, const MethodSettings& settings,
                    const std::string& model, const PeftLayout& layout,
                    std::vector<std::string>& problems) const override {
    const auto field = [&](const char* key) {
      return config.contains(key) ? config[key] : nlohmann::json();
    };
    std::string why;
    const auto theirs =
        selected(field("target_modules"), field("feedforward_modules"), layout, why);
    if (!theirs) {
      problems.push_back(why);
      return;
    }
    const ScaledLinears ours =
        declared(dynamic_cast<const Ia3Spec&>(settings), layout.architecture());
    if (*theirs == ours) return;
    problems.push_back(fmt::format(
        "target_modules {} and feedforward_modules {} scale the outputs of {} and the inputs "
        "of {} (layer.linear), but '{}' declares outputs {} and inputs {}; declare ia3: "
        "{{targets, feedforward, layers}} to match",
        JsonValue::shown(field("target_modules")), JsonValue::shown(field("feedforward_modules")),
        listed(theirs->outputs), listed(theirs->inputs), model, listed(ours.outputs),
        listed(ours.inputs)));
  }
};

}  // namespace

const PeftForm& ia3_peft_form() {
  static const Ia3PeftForm form;
  return form;
}

}  // namespace scion::spec
