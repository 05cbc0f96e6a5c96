// (IA)³'s parameters: their names, shapes and starting value, the one definition that the
// method (ia3_method.h: the parameter table's entries, the binding the passes read,
// initialisation) and the PEFT names (lineage/peft_adapter.h) use.
//
//   blk.N.<linear>.ia3.<model>.out (out, 1)   scales the linear's output (spec targets)
//   blk.N.<linear>.ia3.<model>.in  (1, in)    scales the linear's input (spec feedforward)
//
// The shapes are PEFT 0.10's ia3_l, so adapter files carry them unchanged. Every value
// starts at 1 (the model starts as its parent), as PEFT's init_ia3_weights.
#pragma once

#include <string>
#include <vector>

#include "runtime/adapters/ia3/ia3_spec.h"
#include "runtime/model/parameter_table.h"
#include "spec/workspace.h"

namespace scion::runtime {

inline constexpr const char* kIa3Marker = ".ia3.";  // between the linear and the model

// "attn_k" for "k", "ffn_out" for "ffn_out": a kLinearTargets name's parameter stem.
std::string ia3_linear_stem(const std::string& target);

// "blk.3.attn_k.ia3.review.out"; `on_input` picks ".in".
std::string ia3_parameter_name(int layer, const std::string& stem, const std::string& model,
                               bool on_input);

// Appends `model`'s (IA)³ vectors of block `layer` to `table` (trainable, introduced by
// `model`), in kLinearTargets order.
void add_ia3_parameters(const spec::Ia3Spec& ia3, const std::string& model,
                        const spec::Architecture& arch, int layer,
                        std::vector<ParameterSpec>& table);

// Whether `name` is an (IA)³ vector (any model's).
bool is_ia3_parameter(const std::string& name);

// Floats a training pass holds per token for the method (runtime/model/batch_plan.cpp): every
// output-scaled linear's unscaled output (out, per adapted layer), the widest scaled input
// and its gradient, and the widest scaled output's gradient. The memory plan
// (workbench/training_groups.h) adds them through Ia3Method::training_floats.
std::int64_t ia3_training_floats_per_token(const spec::Ia3Spec& ia3,
                                           const spec::Architecture& arch);

}  // namespace scion::runtime
