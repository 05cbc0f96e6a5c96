// (IA)³ — infused adapter by inhibiting and amplifying inner activations (Liu et al. 2022),
// as PEFT 0.10's IA3 runs it: a learned vector, initialised to ones, multiplies the output
// of each `targets` linear layer (PEFT's target_modules that are not feed-forward:
// y = (W·x + b) ⊙ l) or the input of each `feedforward` one (PEFT's feedforward_modules:
// y = W·(x ⊙ l) + b).
//
// The spec side of the method in one place, as a registered MethodBlock
// (spec/adaptation_method.h): its settings (`adapt: {ia3: {targets, feedforward, layers}}`),
// how they are read and checked, their canonical JSON (the recipe hash and the store's
// record of the adaptation: the same words in both), their schema, and the rule across
// models. A model's settings are `model.adaptation.find<Ia3Spec>()`. It is the spec's part
// of the method, so it speaks in scion::spec and includes only spec/; the method's PEFT
// form is ia3_peft.h, its runtime side ia3_method.h. Linear names are spec::kLinearTargets'
// (q, k, v, o, ffn_in, ffn_out, ffn_gate).
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "spec/adaptation_method.h"

namespace scion::spec {

struct Ia3Spec final : MethodSettings {
  static constexpr std::string_view kKey = "ia3";

  std::vector<std::string> targets = {"k", "v"};       // outputs scaled, vector (out)
  std::vector<std::string> feedforward = {"ffn_out"};  // inputs scaled, vector (in)
  std::vector<int> layers;                             // empty: every layer

  // Whether the method puts a vector on `layer`'s linear `target` (a kLinearTargets name).
  bool adapts(const std::string& target, int layer) const;

  // {"targets": [...], "feedforward": [...], "layers": [...]}: the recipe hash's canonical
  // form and the store's record alike (no enum or float to word differently); the block's
  // from_json reads it back.
  nlohmann::json json() const override;
};

// The block the loader reads `adapt.ia3` through (registered by
// runtime/adapters/registry.cpp).
std::unique_ptr<const MethodBlock> make_ia3_block();

}  // namespace scion::spec
