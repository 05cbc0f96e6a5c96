// Hugging Face checkpoint tensor names and scion's parameter names
// (runtime/model/parameter_table.h), by one declarative table per architecture, as llama.cpp's
// TensorNameMap: a new architecture is a new table, not string surgery in the loader.
//
// BERT (model_type "bert"; '#' is the layer number; docs/hugging-face.md lists it too):
//   tok_emb.weight        embeddings.word_embeddings.weight
//   pos_emb.weight        embeddings.position_embeddings.weight
//   type_emb.weight       embeddings.token_type_embeddings.weight
//   emb_ln.{weight,bias}  embeddings.LayerNorm.{weight,bias}
//   blk.#.attn_q.*        encoder.layer.#.attention.self.query.*       (attn_k: key, attn_v: value)
//   blk.#.attn_o.*        encoder.layer.#.attention.output.dense.*
//   blk.#.ln1.*           encoder.layer.#.attention.output.LayerNorm.*
//   blk.#.ffn_in.*        encoder.layer.#.intermediate.dense.*
//   blk.#.ffn_out.*       encoder.layer.#.output.dense.*
//   blk.#.ln2.*           encoder.layer.#.output.LayerNorm.*
//   pooler.{weight,bias}  pooler.dense.{weight,bias}
// Checkpoints saved from a task model prefix every name with "bert."; that prefix is
// dropped. Skipped with a note, not mapped: buffers (embeddings.position_ids,
// embeddings.token_type_ids) and the pretraining heads (cls.*), which scion does not run.
//
// RoBERTa (model_type "roberta"): BERT's table under the prefix "roberta.", except that
//   pos_emb.weight        embeddings.position_embeddings.weight from row padding_idx + 1
// (RoBERTa numbers positions from padding_idx + 1; the rows before are never used for a
// sequence without padding inside it). Skipped: lm_head.* (the masked-LM head).
//
// GPT-2 (model_type "gpt2", prefix "transformer."); Conv1D weights are stored (in, out)
// and transposed to scion's (out, in); c_attn holds q, k and v side by side:
//   tok_emb.weight        wte.weight                (the LM head is tied to it)
//   pos_emb.weight        wpe.weight
//   blk.#.ln1.*           h.#.ln_1.*
//   blk.#.attn_q.*        h.#.attn.c_attn.*  columns [0, C)    (Conv1D)
//   blk.#.attn_k.*        h.#.attn.c_attn.*  columns [C, 2C)   (Conv1D)
//   blk.#.attn_v.*        h.#.attn.c_attn.*  columns [2C, 3C)  (Conv1D)
//   blk.#.attn_o.*        h.#.attn.c_proj.*                    (Conv1D)
//   blk.#.ln2.*           h.#.ln_2.*
//   blk.#.ffn_in.*        h.#.mlp.c_fc.*                       (Conv1D)
//   blk.#.ffn_out.*       h.#.mlp.c_proj.*                     (Conv1D)
//   ln_f.*                ln_f.*
// Skipped: lm_head.weight (tied to wte), h.#.attn.bias and h.#.attn.masked_bias (the
// causal-mask buffers older checkpoints carry).
// Llama (model_type "llama", LlamaForCausalLM; no biases anywhere):
//   tok_emb.weight        model.embed_tokens.weight
//   blk.#.ln1.weight      model.layers.#.input_layernorm.weight           (RMSNorm)
//   blk.#.attn_q.weight   model.layers.#.self_attn.q_proj.weight          (attn_k: k_proj, attn_v: v_proj,
//                                                                          attn_o: o_proj)
//   blk.#.ln2.weight      model.layers.#.post_attention_layernorm.weight
//   blk.#.ffn_gate.weight model.layers.#.mlp.gate_proj.weight
//   blk.#.ffn_in.weight   model.layers.#.mlp.up_proj.weight
//   blk.#.ffn_out.weight  model.layers.#.mlp.down_proj.weight
//   ln_f.weight           model.norm.weight
//   lm_head.weight        lm_head.weight                                  (untied heads only)
// A LlamaModel saved without the causal-LM wrapper lacks the "model." prefix; it is
// added. Skipped with a note: the rotary_emb.inv_freq buffers older checkpoints carry.
// Mistral (model_type "mistral", MistralForCausalLM): Llama's table.
// Qwen2 (model_type "qwen2", Qwen2ForCausalLM): Llama's table plus q, k and v biases:
//   blk.#.attn_q.bias     model.layers.#.self_attn.q_proj.bias            (attn_k: k_proj,
//                                                                          attn_v: v_proj)
// Phi-3 (model_type "phi3", Phi3ForCausalLM): Llama's table, except two fused tensors split
// into equal parts along the output dimension (rows) and joined again on export:
//   blk.#.attn_q/k/v.weight   model.layers.#.self_attn.qkv_proj.weight    rows [0, C), [C, 2C),
//                                                                          [2C, 3C)
//   blk.#.ffn_gate.weight     model.layers.#.mlp.gate_up_proj.weight      rows [0, F)
//   blk.#.ffn_in.weight       model.layers.#.mlp.gate_up_proj.weight      rows [F, 2F)
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace scion::lineage {

struct HfTensorMapping {
  enum class Kind { kParameter, kSkipped, kUnknown };
  Kind kind = Kind::kUnknown;
  std::string scion_name;  // kParameter (a fused tensor's first part)
  std::string note;        // kSkipped: why
  // A fused tensor (GPT-2's c_attn, Phi-3's qkv_proj and gate_up_proj): scion's parameters
  // that are its equal parts along the output dimension, in order. Empty for a tensor that
  // is one parameter.
  std::vector<std::string> fused;
  bool conv1d = false;         // a 2-D weight stored (in, out): transpose to (out, in)
  bool position_rows = false;  // RoBERTa's positions: drop the first padding_idx + 1 rows
};

// What the checkpoint tensor `hf_name` of a `model_type` model is in scion.
HfTensorMapping map_hf_tensor(std::string_view model_type, std::string_view hf_name);

// The Hugging Face name (without a task prefix) of scion's trunk parameter `scion_name`,
// or nullopt when the architecture has none (adapters, heads). GPT-2's attn_q, attn_k
// and attn_v all give the fused h.#.attn.c_attn tensor.
std::optional<std::string> hf_tensor_name(std::string_view model_type,
                                          std::string_view scion_name);

// The prefix a task model (BertForSequenceClassification, ...) puts before the base
// model's names: "bert." for BERT, "roberta." for RoBERTa, "transformer." for GPT-2, ""
// for Llama, whose table already has LlamaForCausalLM's.
std::string hf_base_model_prefix(std::string_view model_type);

}  // namespace scion::lineage
