// The bottleneck adapter (Houlsby et al. 2019): after a chosen block's attention output,
// its feed-forward output or both, the residual stream receives a small MLP of that output,
// res += up(gelu(down(y))), down (width / reduction, width), up (width, width / reduction).
//
// The spec side of the method in one place, as a registered MethodBlock
// (spec/adaptation_method.h): its settings (`adapt: {bottleneck: {reduction, placement,
// layers}}`), how they are read and checked (errors with key paths), their canonical JSON
// (the recipe hash's input: placement as its index; in spec words, the store's record:
// placement as its word), their schema, and what refusals call it: it is not a change of the
// trunk's weights, so no merge folds it and PEFT has no form of it. A model's settings are
// `model.adaptation.find<BottleneckSpec>()`; code that builds a model sets them with
// `adaptation.set(BottleneckSpec{.reduction = 4})`.
//
// BottleneckSpec is a plain aggregate held in spec::MethodSettingsOf, as LoRA's settings
// are (designated initialisers). Speaks in scion::spec and includes only spec/, like every
// method's spec side.
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <string_view>
#include <vector>

#include "spec/adaptation_method.h"
#include "spec/spec_reader.h"

namespace scion::spec {

// Where the adapter sits in a block: after the attention output, after the FFN output, or
// both. The recipe stores the index, so the order is fixed.
enum class BottleneckPlacement { kAfterAttention, kAfterFfn, kBoth };

inline constexpr Choice<BottleneckPlacement> kBottleneckPlacements[] = {
    {"attention", BottleneckPlacement::kAfterAttention},
    {"ffn", BottleneckPlacement::kAfterFfn},
    {"both", BottleneckPlacement::kBoth}};

struct BottleneckSpec {
  static constexpr std::string_view kKey = "bottleneck";

  int reduction = 16;  // hidden = width / reduction (at least 1)
  BottleneckPlacement placement = BottleneckPlacement::kAfterFfn;
  std::vector<int> layers;  // empty: every layer

  // Whether the adapter sits after the attention output / after the FFN output.
  bool after_attention() const { return placement != BottleneckPlacement::kAfterFfn; }
  bool after_ffn() const { return placement != BottleneckPlacement::kAfterAttention; }

  // {"reduction", "placement" (its index in BottleneckPlacement), "layers"}: the form every
  // bottleneck recipe has hashed since the method existed. The block's from_json reads it
  // back in either mode (placement as index or word).
  nlohmann::json json() const;
};

// The word of `placement` ("attention", "ffn", "both").
std::string_view word(BottleneckPlacement placement);

// The block the loader reads `adapt.bottleneck` through (registered by
// runtime/adapters/registry.cpp).
std::unique_ptr<const MethodBlock> make_bottleneck_block();

}  // namespace scion::spec
