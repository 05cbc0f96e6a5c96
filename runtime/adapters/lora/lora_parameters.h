// LoRA's parameters: their names, shapes and starting values, the one definition the method
// (lora_method.h: the parameter table's entries, the binding the passes read,
// initialisation) and the memory plan use.
//
//   blk.N.<linear>.lora.<model>.a (r, in)    uniform(±1/sqrt(in)): PyTorch's Linear init
//   blk.N.<linear>.lora.<model>.b (out, r)   zeros, so a fresh LoRA computes its parent
//   blk.N.<linear>.lora.<model>.m (out)      DoRA's magnitude (use_dora only): the
//                                            weight's row norms, as PEFT's dora_init
//
// <linear> is a kLinearStems name (attn_q ... ffn_gate).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "runtime/adapters/lora/lora_spec.h"
#include "runtime/model/parameter_table.h"
#include "spec/workspace.h"

namespace scion::runtime {

inline constexpr const char* kLoraMarker = ".lora.";  // between the linear and the model

// "blk.3.attn_q.lora.review.a" for part 'a', 'b' or 'm'.
std::string lora_parameter_name(int layer, const std::string& linear, const std::string& model,
                                char part);

// Appends `model`'s LoRA parameters of block `layer` to `table` (trainable, introduced by
// `model`), in its targets' order.
void add_lora_parameters(const spec::LoraSpec& lora, const std::string& model,
                         const spec::Architecture& arch, int layer,
                         std::vector<ParameterSpec>& table);

// The model whose LoRA parameter `name` is (any model's: "blk.N.<linear>.lora.<model>.a");
// nullopt for any other name.
std::optional<std::string> lora_parameter_model(const std::string& name);

// Floats a training pass over `tokens` tokens holds for a DoRA beyond the plain LoRA's
// (runtime/model/batch_plan.cpp): W·x̃ + s·B·A·x̃ of every adapted linear (out a token), its
// backward's gradient of the widest (out a token), and W + s·B·A of the largest while its
// norms are taken. 0 for a plain LoRA, whose rank-wide rows the memory plan leaves out.
std::int64_t lora_training_floats(const spec::LoraSpec& lora, const spec::Architecture& arch,
                                  std::int64_t tokens);

}  // namespace scion::runtime
