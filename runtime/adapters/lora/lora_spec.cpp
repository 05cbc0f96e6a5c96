#include "runtime/adapters/lora/lora_spec.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "runtime/adapters/lora/lora_peft.h"
#include "spec/foreign_vocabulary.h"
#include "spec/spec_reader.h"
#include "spec/workspace.h"

namespace scion::spec {

bool LoraSpec::adapts(const std::string& target, int layer) const {
  return std::find(targets.begin(), targets.end(), target) != targets.end() &&
         (layers.empty() || std::find(layers.begin(), layers.end(), layer) != layers.end());
}

nlohmann::json LoraSpec::json() const {
  nlohmann::json out = {{"rank", rank},
                        {"alpha", alpha},
                        {"dropout", dropout},
                        {"targets", targets},
                        {"layers", layers}};
  if (use_rslora) out["use_rslora"] = true;
  if (use_dora) out["use_dora"] = true;
  return out;
}

namespace {

constexpr std::string_view kLoraKeys[] = {"rank",   "alpha",      "dropout", "targets",
                                          "layers", "use_rslora", "use_dora"};
constexpr int kUnknownLimit = 1 << 20;  // bounds used when the architecture is unknown

// `targets`: known, distinct linear layers this base has, at least one; `out` is left as
// it was (the default) unless every entry is good.
void read_targets(SpecReader& r, const YamlNode& node, const std::string& path,
                  const Architecture* a, std::vector<std::string>& out) {
  const YamlNode* targets = find(node, "targets");
  if (targets == nullptr) return;
  const std::string tpath = join_path(path, "targets");
  std::vector<std::string> names;
  if (!r.read_string_list(targets, tpath, names)) return;
  const std::vector<std::string_view> known(std::begin(kLinearTargets), std::end(kLinearTargets));
  std::set<std::string> seen;
  bool ok = true;
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (std::find(known.begin(), known.end(), names[i]) == known.end()) {
      // A Hugging Face module name (PEFT's target_modules) gets its scion name.
      if (const std::string ours = linear_targets_of_module(names[i]); !ours.empty())
        r.error(
            *targets->items[i], index_path(tpath, i),
            fmt::format("unknown LoRA target '{}'", names[i]),
            fmt::format("; '{}' is a Hugging Face module name: scion calls it {}", names[i], ours));
      else
        r.report_unknown(*targets->items[i], index_path(tpath, i), names[i], known, "LoRA target");
      ok = false;
    } else if (names[i] == "ffn_gate" && a && !a->gated_ffn()) {
      r.error(*targets->items[i], index_path(tpath, i),
              "target 'ffn_gate' is the gate of a gated FFN (Llama's gate_proj), which this "
              "base does not have",
              "; target ffn_in or ffn_out");
      ok = false;
    } else if (!seen.insert(names[i]).second) {
      r.error(*targets->items[i], index_path(tpath, i),
              fmt::format("target '{}' is listed twice", names[i]));
      ok = false;
    }
  }
  if (names.empty()) {
    r.error(*targets, tpath,
            "expected at least one target (q, k, v, o, ffn_in, ffn_out, ffn_gate)");
    ok = false;
  }
  if (ok) out = names;
}

LoraSpec read_lora(SpecReader& r, const YamlNode& node, const std::string& path,
                   const Architecture* a) {
  LoraSpec s;
  r.check_keys(node, path, kLoraKeys);
  const int width = a ? a->width : kUnknownLimit;
  r.read_int(find(node, "rank"), join_path(path, "rank"), s.rank, 1, width,
             a ? fmt::format("an integer from 1 to {} (the base's width)", width)
               : std::string("a positive integer"));
  r.read_float(find(node, "alpha"), join_path(path, "alpha"), s.alpha, 0, true, 1e6, false,
               "a number greater than 0");
  r.read_float(find(node, "dropout"), join_path(path, "dropout"), s.dropout, 0, false, 1, true,
               "a number from 0 to below 1");
  r.read_bool(find(node, "use_rslora"), join_path(path, "use_rslora"), s.use_rslora);
  r.read_bool(find(node, "use_dora"), join_path(path, "use_dora"), s.use_dora);
  read_targets(r, node, path, a, s.targets);
  const int layers = a ? a->layers : kUnknownLimit;
  r.read_int_list(
      find(node, "layers"), join_path(path, "layers"), s.layers, 0, layers - 1,
      a ? fmt::format("a layer index from 0 to {} (the base has {} layers)", layers - 1, layers)
        : std::string("a layer index of at least 0"));
  return s;
}

// DoRA's norm is of the trunk's fp32 weight plus the model's own update: it runs in fp32,
// and not on a linear layer an ancestor's LoRA already changes (PEFT would take the norm of
// the merged weight, which scion's segments do not hold).
void check_dora(SpecReader& r, const YamlNode& adapt, const Model& m, const Architecture* arch,
                const std::vector<const Model*>& ancestors) {
  const LoraSpec* own = m.adaptation.find<LoraSpec>();
  if (own == nullptr || !own->use_dora || arch == nullptr) return;
  const YamlNode* lora = find(adapt, LoraSpec::kKey);
  const YamlNode* at = lora ? find(*lora, "use_dora") : nullptr;
  const std::string path = join_path(join_path("models", m.name), "adapt.lora.use_dora");
  if (at == nullptr) return;
  if (m.training && m.training->precision == Precision::kBF16)
    r.error(*at, path, "DoRA runs in fp32 only (its weight norm needs the fp32 weights)",
            "; remove train.precision: bf16 or use_dora");
  for (const Model* a : ancestors) {
    const LoraSpec* theirs = a->adaptation.find<LoraSpec>();
    if (theirs == nullptr) continue;
    for (const std::string& t : own->targets) {
      bool shared = false;
      for (int l = 0; l < arch->layers && !shared; ++l)
        shared = own->adapts(t, l) && theirs->adapts(t, l);
      if (!shared) continue;
      r.error(*at, path,
              fmt::format("DoRA on target '{}', which the LoRA of ancestor '{}' already adapts: "
                          "DoRA's norm would have to be of the merged weight",
                          t, a->name),
              "; adapt other targets or layers, or drop use_dora");
      return;
    }
  }
}

class LoraBlock final : public MethodBlock {
 public:
  std::string_view key() const override { return LoraSpec::kKey; }
  std::span<const std::string_view> keys() const override { return kLoraKeys; }

  std::shared_ptr<const MethodSettings> read(SpecReader& reader, const YamlNode& node,
                                             const std::string& path,
                                             const Architecture* arch) const override {
    return std::make_shared<const MethodSettingsOf<LoraSpec>>(read_lora(reader, node, path, arch));
  }

  std::shared_ptr<const MethodSettings> from_json(const nlohmann::json& json) const override {
    try {
      return std::make_shared<const MethodSettingsOf<LoraSpec>>(
          LoraSpec{.rank = json.at("rank").get<int>(),
                   .alpha = json.at("alpha").get<float>(),
                   .dropout = json.at("dropout").get<float>(),
                   .targets = json.at("targets").get<std::vector<std::string>>(),
                   .layers = json.at("layers").get<std::vector<int>>(),
                   .use_rslora = json.value("use_rslora", false),
                   .use_dora = json.value("use_dora", false)});
    } catch (const nlohmann::json::exception&) {
      return nullptr;
    }
  }

  nlohmann::json key_schemas() const override {
    nlohmann::json linears = nlohmann::json::array();
    for (const char* target : kLinearTargets) linears.push_back(target);
    return {{"rank", {{"type", "integer"}}},
            {"alpha", {{"type", "number"}}},
            {"dropout", {{"type", "number"}}},
            {"targets", {{"type", "array"}, {"items", {{"enum", linears}}}}},
            {"layers", {{"type", "array"}, {"items", {{"type", "integer"}}}}},
            {"use_rslora", {{"type", "boolean"}}},
            {"use_dora", {{"type", "boolean"}}}};
  }

  std::string_view description() const override { return "low-rank updates to linear layers"; }

  void check_family(SpecReader& reader, const YamlNode& adapt, const Model& model,
                    const Architecture* arch,
                    const std::vector<const Model*>& ancestors) const override {
    check_dora(reader, adapt, model, arch, ancestors);
  }

  const PeftForm* peft() const override { return &lora_peft_form(); }

  std::string label(const nlohmann::json& settings) const override {
    if (!settings.is_object() || !settings.contains("rank")) return "";
    std::string label = " r=" + settings["rank"].dump();
    if (settings.value("use_dora", nlohmann::json()) == true) label += " dora";
    if (settings.value("use_rslora", nlohmann::json()) == true) label += " rslora";
    return label;
  }
};

}  // namespace

std::unique_ptr<const MethodBlock> make_lora_block() { return std::make_unique<LoraBlock>(); }

}  // namespace scion::spec
