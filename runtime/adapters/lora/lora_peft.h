// LoRA (with rsLoRA and DoRA) in PEFT 0.10's adapter files (spec/peft_form.h): peft_type
// LORA, its tensors' keys, its part of adapter_config.json, and the check of an imported
// adapter_config.json against the declaration.
//
// Tensors: blk.N.<stem>.lora.<model>.{a,b,m} are <module>.lora_A.weight (r, in),
// <module>.lora_B.weight (out, r) and, with DoRA, <module>.lora_magnitude_vector (out),
// <module> the task model's module of the linear (PeftLayout::linear_module). LoRA's scale
// is alpha / r in both (alpha / sqrt(r) with use_rslora, written as declared). GPT-2 fuses
// q, k and v into one c_attn: scion's k LoRAs of rank r on them are written as one c_attn
// LoRA of rank k·r, A the k A's stacked, B block-diagonal into c_attn's q, k, v output
// ranges, with alpha k·alpha so that the scale (and so B·A·scale) is unchanged
// (sqrt(k)·alpha under rsLoRA); where other GPT-2 modules are adapted too, rank_pattern and
// alpha_pattern give c_attn its rank. Phi-3's qkv_proj and gate_up_proj are fused the same
// way (Linear, not Conv1D), each with its own k in rank_pattern where the k differ. DoRA on GPT-2 is refused: PEFT 0.10 takes the norm of
// the weight as a Linear holds it, and GPT-2's Conv1D holds it transposed.
//
// target_modules is module names ("query", "value") when each one names only the adapted
// modules and every layer is adapted, else a regular expression naming exactly the adapted
// modules. An imported config must hold what scion would write for the declaration (r,
// lora_alpha, lora_dropout, target_modules as a set, use_rslora, use_dora, rank_pattern and
// alpha_pattern, bias "none"), and no layers_to_transform or layers_pattern: what scion does
// not run is refused, never ignored.
#pragma once

#include "spec/peft_form.h"

namespace scion::spec {

// The one PEFT form of LoRA, which its MethodBlock (lora_spec.h) returns.
const PeftForm& lora_peft_form();

}  // namespace scion::spec
