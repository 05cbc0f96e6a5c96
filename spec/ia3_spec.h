// (IA)³ — infused adapter by inhibiting and amplifying inner activations (Liu et al. 2022),
// as PEFT 0.10's IA3 runs it: a learned vector, initialised to ones, multiplies the output
// of each `targets` linear layer (PEFT's target_modules that are not feed-forward:
// y = (W·x + b) ⊙ l) or the input of each `feedforward` one (PEFT's feedforward_modules:
// y = W·(x ⊙ l) + b).
//
// The spec side of the method in one place: its settings (`adapt: {ia3: {targets,
// feedforward, layers}}`, the key names in spec/keys.h kIa3), how they are read and
// checked, their canonical JSON (the recipe hash and the store's record of the
// adaptation: the same words in both), and the rule across models. The runtime side is
// runtime/adapters/ia3/. Linear names are spec::kLinearTargets' (q, k, v, o, ffn_in,
// ffn_out, ffn_gate).
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace scion::spec {

class SpecReader;
struct YamlNode;
struct Architecture;
struct Model;

struct Ia3Spec {
  std::vector<std::string> targets = {"k", "v"};       // outputs scaled, vector (out)
  std::vector<std::string> feedforward = {"ffn_out"};  // inputs scaled, vector (in)
  std::vector<int> layers;                             // empty: every layer

  // Whether the method puts a vector on `layer`'s linear `target` (a kLinearTargets name).
  bool adapts(const std::string& target, int layer) const;
};

// {"targets": [...], "feedforward": [...], "layers": [...]}: the recipe hash's canonical
// form and the store's record alike (no enum or float to word differently).
nlohmann::json ia3_json(const Ia3Spec& ia3);
// The inverse; nullopt when `json` is not such an object.
std::optional<Ia3Spec> ia3_from_json(const nlohmann::json& json);

namespace detail {

// Reads `adapt.ia3` at `path` (a mapping: the caller checked). `arch` null: the base's
// architecture is unknown, and checks that need it are skipped.
Ia3Spec load_ia3(SpecReader& reader, const YamlNode& node, const std::string& path,
                 const Architecture* arch);

// One vector per linear layer: (IA)³ does not go where the model's own LoRA or an
// ancestor's LoRA or (IA)³ already is, nor a LoRA where an ancestor's (IA)³ is (the order
// of a scale and a low-rank sum matters, and PEFT runs one adapter over a merged base).
// `adapt` is the model's `adapt` node; `ancestors` parent first.
void check_ia3_overlaps(SpecReader& reader, const YamlNode& adapt, const Model& model,
                        const Architecture* arch, const std::vector<const Model*>& ancestors);

}  // namespace detail
}  // namespace scion::spec
