// LoRA — low-rank adaptation (Hu et al. 2021), as PEFT 0.10's LORA runs it: each `targets`
// linear layer of each chosen layer gets y = W·x + b + s·B·A·x, A (rank, in), B (out, rank),
// s = alpha / rank; with its options rsLoRA (`use_rslora`: s = alpha / sqrt(rank),
// Kalajdzievski 2023) and DoRA (`use_dora`, Liu et al. 2024: a magnitude m per output
// feature, y = m ⊙ (W + s·B·A)x / ‖W + s·B·A‖ + b, the row norms held constant in the
// backward pass).
//
// The spec side of the method in one place, as a registered MethodBlock
// (spec/adaptation_method.h): its settings (`adapt: {lora: {rank, alpha, dropout, targets,
// layers, use_rslora, use_dora}}`), how they are read and checked (errors with key paths),
// their canonical JSON (the recipe hash's input and, in spec words, the store's record),
// their schema, the rules across models (DoRA's) and the label `lineage` prints. A model's
// settings are `model.adaptation.find<LoraSpec>()`; code that builds a model sets them
// with `adaptation.set(LoraSpec{.rank = 2, .alpha = 4})`.
//
// LoraSpec is a plain aggregate, stored wrapped in spec::MethodSettingsOf<LoraSpec>, not a
// class deriving MethodSettings: tests, benches and runtime code build it with designated
// initialisers, which a class with a virtual base cannot take. Its PEFT form is
// lora_peft.h, which the block's peft() returns.
// Speaks in scion::spec and includes only spec/, like every method's spec side.
#pragma once

#include <cmath>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "spec/adaptation_method.h"

namespace scion::spec {

struct LoraSpec {
  static constexpr std::string_view kKey = "lora";

  int rank = 8;
  float alpha = 16.0f;
  float dropout = 0.0f;
  std::vector<std::string> targets = {"q", "v"};  // from kLinearTargets
  std::vector<int> layers;                        // empty: every layer
  bool use_rslora = false;  // rank-stabilised scale alpha / sqrt(rank) (Kalajdzievski 2023)
  // DoRA (Liu et al. 2024, as PEFT 0.10 runs it): a magnitude m per output feature,
  // y = m ⊙ (W + s·B·A)x / ‖W + s·B·A‖ (row norms, held constant in the backward pass) + b.
  bool use_dora = false;

  // The factor B·A is multiplied by: alpha / rank, or alpha / sqrt(rank) with use_rslora
  // (as PEFT's LoraLayer.update_layer). The one definition: training, merging and export
  // all read it here.
  float scaling() const {
    return use_rslora ? alpha / std::sqrt(static_cast<float>(rank))
                      : alpha / static_cast<float>(rank);
  }

  // Whether the LoRA puts a product on `layer`'s linear `target` (a kLinearTargets name).
  bool adapts(const std::string& target, int layer) const;

  // {"rank", "alpha", "dropout", "targets", "layers"}, and "use_rslora" / "use_dora" only
  // when set, so that every LoRA recipe from before the options keeps its hash. The block's
  // from_json reads it back, in either mode (spec/spec_json.h).
  nlohmann::json json() const;
};

// The block the loader reads `adapt.lora` through (registered by
// runtime/adapters/registry.cpp).
std::unique_ptr<const MethodBlock> make_lora_block();

}  // namespace scion::spec
