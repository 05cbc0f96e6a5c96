// The bottleneck adapter's parameters: their names, shapes and starting values, the one
// definition that the method (bottleneck_method.h: the parameter table's entries, the
// binding the passes read, initialisation) uses.
//
//   blk.N.adapter_attn.<model>.down.weight (H, C)   after the attention output
//   blk.N.adapter_attn.<model>.down.bias   (H)
//   blk.N.adapter_attn.<model>.up.weight   (C, H)
//   blk.N.adapter_attn.<model>.up.bias     (C)
//   blk.N.adapter_ffn.<model>.…            the same after the FFN output
//
// H = max(1, C / reduction). The up projection starts at zero (weight and bias), so a fresh
// adapter adds nothing and the model starts as its parent; down's weight starts as a trunk
// weight does (normal), its bias at zero.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "runtime/adapters/bottleneck/bottleneck_spec.h"
#include "runtime/model/adaptation_method.h"
#include "runtime/model/parameter_table.h"
#include "spec/workspace.h"

namespace scion::runtime {

// The hidden width of `settings`' adapters on a base of width `width`.
int bottleneck_hidden(const spec::BottleneckSpec& settings, int width);

// "blk.3.adapter_ffn.review." for (3, kAfterFfn, "review"): the stem of one adapter's four
// parameters.
std::string bottleneck_stem(int layer, BlockSite site, const std::string& model);

// Appends `model`'s adapters of block `layer` to `table` (trainable, introduced by `model`):
// the attention site's, then the FFN site's, each down.weight, down.bias, up.weight, up.bias.
void add_bottleneck_parameters(const spec::BottleneckSpec& settings, const std::string& model,
                               const spec::Architecture& arch, int layer,
                               std::vector<ParameterSpec>& table);

// The model that introduced `name` when it is a bottleneck parameter (any model's); nullopt
// otherwise.
std::optional<std::string> bottleneck_parameter_model(const std::string& name);

// Floats a training pass holds per token for `settings` (runtime/model/batch_plan.cpp): each
// adapter's pre- and post-GELU rows (2 H) and the backward's scratch (2 H, once). The memory
// plan (workbench/training_groups.h) adds them through BottleneckMethod::training_floats.
std::int64_t bottleneck_training_floats_per_token(const spec::BottleneckSpec& settings,
                                                  const spec::Architecture& arch);

}  // namespace scion::runtime
