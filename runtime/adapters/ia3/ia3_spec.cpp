#include "runtime/adapters/ia3/ia3_spec.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "runtime/adapters/ia3/ia3_peft.h"
#include "runtime/adapters/lora/lora_spec.h"
#include "spec/keys.h"
#include "spec/spec_reader.h"
#include "spec/workspace.h"

namespace scion::spec {

bool Ia3Spec::adapts(const std::string& target, int layer) const {
  const bool listed =
      std::find(targets.begin(), targets.end(), target) != targets.end() ||
      std::find(feedforward.begin(), feedforward.end(), target) != feedforward.end();
  return listed &&
         (layers.empty() || std::find(layers.begin(), layers.end(), layer) != layers.end());
}

nlohmann::json Ia3Spec::json() const {
  return {{"targets", targets}, {"feedforward", feedforward}, {"layers", layers}};
}

namespace detail {
namespace {

// Whether model `m` uses the method of `Settings` on layer `l`'s linear `t`.
template <class Settings>
bool method_adapts(const Model& m, const std::string& t, int l) {
  const Settings* settings = m.adaptation.find<Settings>();
  return settings != nullptr && settings->adapts(t, l);
}

constexpr std::string_view kIa3Keys[] = {"targets", "feedforward", "layers"};

// A list of linear layers at `key`; `out` is left as it was (the default) when the key is
// absent, and set only when every entry is a known, distinct linear this base has.
void read_linears(SpecReader& r, const YamlNode& node, const std::string& path,
                  std::string_view key, const Architecture* a, std::vector<std::string>& out) {
  const YamlNode* list = find(node, key);
  const std::string lpath = join_path(path, key);
  std::vector<std::string> names;
  if (list == nullptr || !r.read_string_list(list, lpath, names)) return;
  const std::vector<std::string_view> known(std::begin(kLinearTargets), std::end(kLinearTargets));
  std::set<std::string> seen;
  bool ok = true;
  for (std::size_t i = 0; i < names.size(); ++i) {
    const std::string ipath = index_path(lpath, i);
    if (std::find(known.begin(), known.end(), names[i]) == known.end()) {
      r.report_unknown(*list->items[i], ipath, names[i], known, "(IA)³ linear layer");
      ok = false;
    } else if (names[i] == "ffn_gate" && a && !a->gated_ffn()) {
      r.error(*list->items[i], ipath,
              "'ffn_gate' is the gate of a gated FFN (Llama's gate_proj), which this base does "
              "not have",
              "; name ffn_in or ffn_out");
      ok = false;
    } else if (!seen.insert(names[i]).second) {
      r.error(*list->items[i], ipath, fmt::format("'{}' is listed twice", names[i]));
      ok = false;
    }
  }
  if (ok) out = names;
}

}  // namespace

Ia3Spec load_ia3(SpecReader& r, const YamlNode& node, const std::string& path,
                 const Architecture* a) {
  Ia3Spec s;
  r.check_keys(node, path, kIa3Keys);
  read_linears(r, node, path, "targets", a, s.targets);
  read_linears(r, node, path, "feedforward", a, s.feedforward);
  for (const std::string& t : s.targets)
    if (std::find(s.feedforward.begin(), s.feedforward.end(), t) != s.feedforward.end()) {
      const YamlNode* ff = find(node, "feedforward");
      r.error(ff ? *ff : node, join_path(path, "feedforward"),
              fmt::format("'{}' is in both targets (output scaled) and feedforward (input "
                          "scaled); a linear layer gets one (IA)³ vector",
                          t),
              "; keep it in one list");
      break;
    }
  if (s.targets.empty() && s.feedforward.empty())
    r.error(node, path,
            "expected at least one linear layer in targets or feedforward (q, k, v, o, ffn_in, "
            "ffn_out, ffn_gate)");
  const int layers = a ? a->layers : 1 << 20;
  r.read_int_list(
      find(node, "layers"), join_path(path, "layers"), s.layers, 0, layers - 1,
      a ? fmt::format("a layer index from 0 to {} (the base has {} layers)", layers - 1, layers)
        : std::string("a layer index of at least 0"));
  return s;
}

void check_ia3_overlaps(SpecReader& r, const YamlNode& adapt, const Model& m,
                        const Architecture* arch, const std::vector<const Model*>& ancestors) {
  if (arch == nullptr) return;
  const Adaptation& own = m.adaptation;
  const Ia3Spec* own_ia3 = own.find<Ia3Spec>();
  const LoraSpec* own_lora = own.find<LoraSpec>();
  if (!own_ia3 && !own_lora) return;
  const auto report = [&](const char* method, const std::string& t, int l,
                          const std::string& other) {
    const YamlNode* at = find(adapt, method);
    r.error(at ? *at : adapt, join_path(join_path(join_path("models", m.name), "adapt"), method),
            fmt::format("{} on linear '{}' of layer {}, which {} already adapts: (IA)³ shares "
                        "its linear layer with no LoRA or other (IA)³",
                        method == std::string("ia3") ? "(IA)³" : "LoRA", t, l, other),
            "; adapt other targets or layers");
  };
  for (int l = 0; l < arch->layers; ++l)
    for (const char* target : kLinearTargets) {
      const std::string t = target;
      if (own_ia3 && own_ia3->adapts(t, l)) {
        if (own_lora && own_lora->adapts(t, l)) return report("ia3", t, l, "its own LoRA");
        for (const Model* a : ancestors)
          if (method_adapts<LoraSpec>(*a, t, l) || method_adapts<Ia3Spec>(*a, t, l))
            return report("ia3", t, l, "ancestor '" + a->name + "'");
      }
      if (own_lora && own_lora->adapts(t, l))
        for (const Model* a : ancestors)
          if (method_adapts<Ia3Spec>(*a, t, l))
            return report("lora", t, l, "the (IA)³ of ancestor '" + a->name + "'");
    }
}

}  // namespace detail

namespace {

class Ia3Block final : public MethodBlock {
 public:
  std::string_view key() const override { return Ia3Spec::kKey; }
  std::span<const std::string_view> keys() const override { return detail::kIa3Keys; }

  std::shared_ptr<const MethodSettings> read(SpecReader& reader, const YamlNode& node,
                                             const std::string& path,
                                             const Architecture* arch) const override {
    return std::make_shared<const Ia3Spec>(detail::load_ia3(reader, node, path, arch));
  }

  std::shared_ptr<const MethodSettings> from_json(const nlohmann::json& json) const override {
    try {
      auto ia3 = std::make_shared<Ia3Spec>();
      ia3->targets = json.at("targets").get<std::vector<std::string>>();
      ia3->feedforward = json.at("feedforward").get<std::vector<std::string>>();
      ia3->layers = json.at("layers").get<std::vector<int>>();
      return ia3;
    } catch (const nlohmann::json::exception&) {
      return nullptr;
    }
  }

  nlohmann::json key_schemas() const override {
    nlohmann::json linears = nlohmann::json::array();
    for (const char* target : kLinearTargets) linears.push_back(target);
    const nlohmann::json linear_list = {{"type", "array"}, {"items", {{"enum", linears}}}};
    return {{"targets", linear_list},
            {"feedforward", linear_list},
            {"layers", {{"type", "array"}, {"items", {{"type", "integer"}}}}}};
  }

  std::string_view description() const override {
    return "(IA)³: learned vectors scaling linear layers' outputs (targets) or inputs "
           "(feedforward)";
  }

  void check_family(SpecReader& reader, const YamlNode& adapt, const Model& model,
                    const Architecture* arch,
                    const std::vector<const Model*>& ancestors) const override {
    detail::check_ia3_overlaps(reader, adapt, model, arch, ancestors);
  }

  const PeftForm* peft() const override { return &ia3_peft_form(); }
};

}  // namespace

std::unique_ptr<const MethodBlock> make_ia3_block() { return std::make_unique<Ia3Block>(); }

}  // namespace scion::spec
