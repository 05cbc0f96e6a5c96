#include "runtime/adapters/lora/lora_peft.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "base/json_value.h"
#include "runtime/adapters/lora/lora_parameters.h"
#include "runtime/adapters/lora/lora_spec.h"
#include "spec/workspace.h"

namespace scion::spec {
namespace {

const LoraSpec& lora_of(const MethodSettings& settings) {
  return dynamic_cast<const MethodSettingsOf<LoraSpec>&>(settings).value;
}

std::string marker_of(const std::string& model) { return runtime::kLoraMarker + model + "."; }

// The declared targets, one per module: GPT-2's q, k and v are one c_attn, named by its
// first adapted part.
std::vector<std::string> module_heads(const LoraSpec& lora, const PeftLayout& layout) {
  std::vector<std::string> heads;
  std::set<std::string> modules;
  for (const std::string& t : lora.targets)
    if (modules.insert(layout.module_targets(t).front()).second) heads.push_back(t);
  return heads;
}

// How many of the declared targets the module holding `target` fuses.
int targets_in_module(const LoraSpec& lora, const PeftLayout& layout, const std::string& target) {
  const std::vector<std::string> parts = layout.module_targets(target);
  return static_cast<int>(std::count_if(lora.targets.begin(), lora.targets.end(), [&](auto& t) {
    return std::find(parts.begin(), parts.end(), t) != parts.end();
  }));
}

nlohmann::json target_modules(const LoraSpec& lora, const PeftLayout& layout) {
  const std::vector<std::string> heads = module_heads(lora, layout);
  if (lora.layers.empty()) {
    nlohmann::json names = nlohmann::json::array();
    for (const std::string& t : heads) names.push_back(layout.module_suffix(t));
    if (std::none_of(names.begin(), names.end(), [](const auto& n) { return n == ""; }))
      return names;
  }
  // PEFT full-matches a string against each module's whole name.
  return layout.linears_regex(heads, lora.layers);
}

// One module's LoRA from scion's on its parts: A (r, in), B (out, r), DoRA's magnitude.
struct LoraPart {
  std::size_t part = 0;  // index among the fused module's parts
  const PeftTensor* a = nullptr;
  const PeftTensor* b = nullptr;
  const PeftTensor* m = nullptr;  // null for a plain LoRA
};

// `parts`: how many linears the module fuses (1: a module of its own, written as it is).
// Several LoRAs on the parts of a fused module become one, A stacked and B placed at each
// part's output rows.
void add_module_lora(const std::string& module, std::size_t parts, std::vector<LoraPart> loras,
                     std::vector<PeftTensor>& out) {
  if (parts == 1) {
    out.push_back({module + ".lora_A.weight", loras[0].a->shape, loras[0].a->values});
    out.push_back({module + ".lora_B.weight", loras[0].b->shape, loras[0].b->values});
    if (loras[0].m)
      out.push_back({module + ".lora_magnitude_vector", loras[0].m->shape, loras[0].m->values});
    return;
  }
  std::sort(loras.begin(), loras.end(), [](auto& x, auto& y) { return x.part < y.part; });
  const std::int64_t r = loras[0].a->shape[0], in = loras[0].a->shape[1];
  const std::int64_t part_out = loras[0].b->shape[0];
  const std::int64_t R = r * static_cast<std::int64_t>(loras.size());
  const std::int64_t O = part_out * static_cast<std::int64_t>(parts);
  PeftTensor A{module + ".lora_A.weight", {R, in}, {}};
  PeftTensor B{module + ".lora_B.weight", {O, R}, std::vector<float>(O * R, 0.0f)};
  for (std::size_t j = 0; j < loras.size(); ++j) {
    const std::vector<float>& a = loras[j].a->values;
    const std::vector<float>& b = loras[j].b->values;
    A.values.insert(A.values.end(), a.begin(), a.end());
    const std::int64_t row0 = static_cast<std::int64_t>(loras[j].part) * part_out;
    const std::int64_t col0 = static_cast<std::int64_t>(j) * r;
    for (std::int64_t o = 0; o < part_out; ++o)
      for (std::int64_t k = 0; k < r; ++k) B.values[(row0 + o) * R + col0 + k] = b[o * r + k];
  }
  out.push_back(std::move(A));
  out.push_back(std::move(B));
}

class LoraPeftForm final : public PeftForm {
 public:
  std::string_view peft_type() const override { return "LORA"; }

  std::string export_refusal(const MethodSettings& settings,
                             const Architecture& arch) const override {
    if (!lora_of(settings).use_dora || arch.hf_model_type != "gpt2") return "";
    return "PEFT 0.10's DoRA takes the norm of the weight as a Linear holds it, (out, in), and "
           "GPT-2's Conv1D holds (in, out) (fan_in_fan_out), so it would not run the adapter as "
           "scion does (--format huggingface merges DoRA into the weights)";
  }

  // blk.N.<stem>.lora.<model>.{a,b,m} is <module>.lora_A.weight, .lora_B.weight and
  // .lora_magnitude_vector: one to one except on a fused module (tensors() combines them).
  std::optional<std::string> tensor_key(const std::string& name, const std::string& model,
                                        const PeftLayout& layout) const override {
    const auto p = linear_parameter(name, marker_of(model));
    if (!p || (p->rest != "a" && p->rest != "b" && p->rest != "m")) return std::nullopt;
    const std::optional<std::string> module = layout.linear_module(p->layer, p->target);
    if (!module) return std::nullopt;
    return *module + (p->rest == "a"   ? ".lora_A.weight"
                      : p->rest == "b" ? ".lora_B.weight"
                                       : ".lora_magnitude_vector");
  }

  std::vector<PeftTensor> tensors(const std::vector<PeftTensor>& own, const std::string& model,
                                  const PeftLayout& layout) const override {
    std::map<std::string, const PeftTensor*> by_name;
    for (const PeftTensor& t : own) by_name[t.name] = &t;
    std::map<std::string, std::vector<LoraPart>> by_module;
    std::map<std::string, std::size_t> parts_of;
    for (const PeftTensor& t : own) {
      const auto p = linear_parameter(t.name, marker_of(model));
      if (!p || p->rest != "a") continue;
      const std::optional<std::string> module = layout.linear_module(p->layer, p->target);
      if (!module) continue;
      const std::vector<std::string> parts = layout.module_targets(p->target);
      const std::string stem = t.name.substr(0, t.name.size() - 1);
      const auto m = by_name.find(stem + "m");
      by_module[*module].push_back(
          {static_cast<std::size_t>(std::find(parts.begin(), parts.end(), p->target) -
                                    parts.begin()),
           &t, by_name.at(stem + "b"), m == by_name.end() ? nullptr : m->second});
      parts_of[*module] = parts.size();
    }
    std::vector<PeftTensor> out;
    for (auto& [module, loras] : by_module)
      add_module_lora(module, parts_of[module], std::move(loras), out);
    return out;
  }

  // A module holding k of scion's targets (GPT-2's c_attn, Phi-3's qkv_proj and
  // gate_up_proj) has their ranks summed; its alpha keeps the scale: k·alpha / (k·r), or
  // with rsLoRA sqrt(k)·alpha / sqrt(k·r). When every module holds the same k, r and
  // lora_alpha say so; otherwise rank_pattern and alpha_pattern name each fused module.
  void add_config(const MethodSettings& settings, const PeftLayout& layout,
                  nlohmann::json& config) const override {
    const LoraSpec& lora = lora_of(settings);
    std::map<std::string, int> fused;  // module suffix -> k > 1
    bool all_fused = true;
    for (const std::string& t : module_heads(lora, layout)) {
      const int k = targets_in_module(lora, layout, t);
      if (k > 1)
        fused[layout.module_suffix(t)] = k;
      else
        all_fused = false;
    }
    const auto scaled_alpha = [&](int k) {
      return (lora.use_rslora ? std::sqrt(static_cast<double>(k)) : k) *
             static_cast<double>(lora.alpha);
    };
    const bool one_k = all_fused && !fused.empty() &&
                       std::all_of(fused.begin(), fused.end(), [&](const auto& m) {
                         return m.second == fused.begin()->second;
                       });
    nlohmann::json rank_pattern = nlohmann::json::object();
    nlohmann::json alpha_pattern = nlohmann::json::object();
    int r = lora.rank;
    double alpha = lora.alpha;
    if (one_k) {
      r *= fused.begin()->second;
      alpha = scaled_alpha(fused.begin()->second);
    } else {
      for (const auto& [module, k] : fused) {
        rank_pattern[module] = k * lora.rank;
        alpha_pattern[module] = scaled_alpha(k);
      }
    }
    config["peft_type"] = "LORA";
    config["r"] = r;
    config["lora_alpha"] = alpha;
    config["lora_dropout"] = lora.dropout;
    config["target_modules"] = target_modules(lora, layout);
    config["bias"] = "none";
    config["init_lora_weights"] = true;
    config["use_rslora"] = lora.use_rslora;
    config["use_dora"] = lora.use_dora;
    config["layers_to_transform"] = nullptr;
    config["layers_pattern"] = nullptr;
    config["rank_pattern"] = rank_pattern;
    config["alpha_pattern"] = alpha_pattern;
  }

  // Every key scion reads must hold what the declaration implies (what add_config writes
  // for it); keys that would change what the adapter computes and that scion does not run
  // are refused rather than ignored.
  void check_config(const nlohmann::json& config, const MethodSettings& settings,
                    const std::string& model, const PeftLayout& layout,
                    std::vector<std::string>& problems) const override {
    nlohmann::json expected = nlohmann::json::object();
    add_config(settings, layout, expected);
    const auto field = [&](const char* key) {
      return config.contains(key) ? config[key] : nlohmann::json();
    };
    const auto shown = [](const nlohmann::json& v) { return JsonValue::shown(v); };
    if (field("r") != expected["r"])
      problems.push_back(fmt::format("r is {}, but '{}' declares rank {}", shown(field("r")), model,
                                     shown(expected["r"])));
    if (!field("lora_alpha").is_number() ||
        std::abs(field("lora_alpha").get<double>() - expected["lora_alpha"].get<double>()) > 1e-6)
      problems.push_back(fmt::format("lora_alpha is {}, but '{}' declares alpha {}",
                                     shown(field("lora_alpha")), model,
                                     shown(expected["lora_alpha"])));
    check_dropout(field("lora_dropout"), expected["lora_dropout"], model, problems);
    if (!same_targets(field("target_modules"), expected["target_modules"]))
      problems.push_back(fmt::format("target_modules is {}, but '{}' adapts {}",
                                     shown(field("target_modules")), model,
                                     shown(expected["target_modules"])));
    for (const char* option : {"use_dora", "use_rslora"})
      if ((field(option) == true) != (expected[option] == true))
        problems.push_back(fmt::format(
            "{0} is {1}, but '{2}' declares {0} {3}; declare lora: {{{0}: {1}}} to import it",
            option, shown(field(option)), model, shown(expected[option])));
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
            key, shown(field(key)), model, shown(expected["r"]), shown(expected["lora_alpha"])));
    if (!field("bias").is_null() && field("bias") != "none")
      problems.push_back(fmt::format("bias is {}; scion's LoRA trains no biases (bias \"none\")",
                                     shown(field("bias"))));
  }

 private:
  static void check_dropout(const nlohmann::json& dropout, const nlohmann::json& expected,
                            const std::string& model, std::vector<std::string>& problems) {
    const auto shown = [](const nlohmann::json& v) { return JsonValue::shown(v); };
    const double p = dropout.is_number() ? dropout.get<double>() : 0.0;
    if (!dropout.is_null() && (!dropout.is_number() || !(p >= 0.0) || !(p < 1.0)))
      problems.push_back(fmt::format("lora_dropout is {}, expected a probability from 0 to below 1",
                                     shown(dropout)));
    else if (std::abs(p - expected.get<double>()) > 1e-6)
      problems.push_back(
          fmt::format("lora_dropout is {}, but '{}' declares dropout {}; declare "
                      "lora: {{dropout: {}}} to import it",
                      shown(dropout), model, shown(expected), shown(dropout)));
  }

  // Target modules compare as sets when both are lists of names.
  static bool same_targets(const nlohmann::json& a, const nlohmann::json& b) {
    const auto names = [](const nlohmann::json& list) {
      std::set<std::string> out;
      for (const nlohmann::json& n : list)
        out.insert(n.is_string() ? n.get<std::string>() : n.dump());
      return out;
    };
    if (a.is_array() && b.is_array()) return names(a) == names(b);
    return a == b;
  }
};

}  // namespace

const PeftForm& lora_peft_form() {
  static const LoraPeftForm form;
  return form;
}

}  // namespace scion::spec
