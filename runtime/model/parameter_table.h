// The parameter table: every parameter of a model by its stable name, with its shape,
// the model that introduced its current value, and whether training this model updates it.
//
// This is the contract between the runtime (which lays tensors out from it), the lineage
// store (which records name -> digest) and `scion plan` (which counts and sizes). Names:
//
//   tok_emb.weight (V, C)   pos_emb.weight (T, C)   ln_f.* (pre-norm) | emb_ln.* (post-norm)
//   blk.N.ln1.{weight,bias} (C)  blk.N.attn_{q,k,v,o}.weight (C, C) .bias (C)
//   blk.N.ln2.{weight,bias} (C)  blk.N.ffn_in.weight (F, C) .bias (F)
//   blk.N.ffn_out.weight (C, F) .bias (C)   lm_head.weight (V, C) when embeddings are untied
//   head.weight (K, C), head.bias (K)   a base trained with the classification objective
//   type_emb.weight (types, C)   BERT's token-type embeddings (Architecture::type_vocab_size)
//   pooler.weight (C, C), pooler.bias (C)   BERT's pooler (Architecture::pooler)
//
// The Llama family changes the trunk: no pos_emb (rotary positions), norms without bias
// (RMSNorm), linear layers without bias, attn_k/attn_v (Ckv, C) with Ckv = key/value
// heads × head width (grouped-query attention), and blk.N.ffn_gate.weight (F, C) beside
// ffn_in (up_proj) and ffn_out (down_proj) for the SwiGLU FFN.
//
// Adapters carry the name of the model that introduced them, so a descendant of a
// descendant can hold its parent's adapter and its own on the same linear layer:
//
//   blk.N.<linear>.<key>.<model>.*  a registered method's (adaptation_method.h), named in
//                                   its folder (adapters/<key>/<key>_parameters.h)
//                                   <linear>: attn_q ... ffn_gate
//   blk.N.prefix.<model>.{keys,values} (P, C)                 prompt.<model>.embeddings (P, C)
//   blk.N.adapter_{attn,ffn}.<model>.down.weight (C/red, C) .down.bias (C/red)
//                                    .up.weight (C, C/red)  .up.bias (C)
//   head.<model>.weight (K, C)   head.<model>.bias (K)
//
// Linear weights are (out, in), as in PyTorch, so safetensors checkpoints load unchanged.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "spec/workspace.h"

namespace scion::runtime {

struct ParameterSpec {
  std::string name;
  std::vector<std::int64_t> shape;
  std::string introduced_by;  // the model whose training produced this value
  bool trainable = false;     // updated when *this* model is trained

  std::int64_t numel() const;
};

// The table of `model`, in a stable order: inherited parameters first (trunk, then each
// ancestor's adapters from the base down), then the model's own.
// REQUIRES: model belongs to workspace (a validated Workspace).
std::vector<ParameterSpec> parameter_table(const spec::Workspace& workspace,
                                           const spec::Model& model);

// Whether `name` is the weight of one of a block's six trunk linear layers
// ("blk.3.ffn_in.weight"): the bulk of a trunk, and what a bf16 training group holds in
// bf16 when it is frozen (runtime/model/parameter_binding.h).
bool is_trunk_linear_weight(const std::string& name);

// The linear layer name stem of a spec::kLinearTargets name ("q" -> "attn_q", "ffn_in" ->
// "ffn_in").
std::string linear_stem(const std::string& target);

// (out, in) of a linear layer stem ("attn_k", or with its block: "blk.3.attn_k").
std::pair<std::int64_t, std::int64_t> linear_shape(const spec::Architecture& arch,
                                                    const std::string& stem);

}  // namespace scion::runtime
