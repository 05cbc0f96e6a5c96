// A Hugging Face model folder as an imported base (`import: path/to/folder`).
//
// The folder holds config.json, the weights (model.safetensors, or shards listed by
// model.safetensors.index.json) and the tokenizer (tokenizer.json, else vocab.txt).
// read_hf_model_folder() turns config.json into the base's Architecture, lists the files
// that make the model and digests them: the digest is the SHA-256 of the lines
// "<file name> <SHA-256 of its bytes>\n" in sorted name order, so the recipe hash changes
// when any of them does, wherever the folder lives.
//
// Supported model_type (docs/hugging-face.md has the details):
//   "bert"     BertModel (BERT, MiniLM): post-norm, learned positions, token-type
//              embeddings, the pooler, hidden_act gelu (erf) or gelu_new/gelu_pytorch_tanh;
//              WordPiece from tokenizer.json or vocab.txt
//   "roberta"  RobertaModel: BERT's encoder whose positions start at padding_idx + 1
//              (max_length is max_position_embeddings - padding_idx - 1); byte-level BPE
//   "gpt2"     GPT2Model / GPT2LMHeadModel: pre-norm causal decoder, learned positions,
//              activation_function gelu_new (tanh), final ln_f, LM head tied to wte;
//              byte-level BPE
//   "llama"    LlamaForCausalLM (SmolLM, TinyLlama, Llama 2/3 shapes): a pre-norm decoder
//              with RMSNorm (rms_norm_eps), rotary positions (rope_theta; rope_scaling
//              none, linear, or dynamic, which equals none up to max_position_embeddings;
//              llama3, yarn, longrope and su are refused), SwiGLU (hidden_act silu),
//              grouped-query attention (num_key_value_heads), tie_word_embeddings, no
//              biases; byte-level BPE
//   "qwen2"    Qwen2ForCausalLM (Qwen2, Qwen2.5): Llama's decoder with biases on q, k and v;
//              use_sliding_window true and any rope_scaling are refused
//   "mistral"  MistralForCausalLM: Llama's decoder with sliding_window (default 4096, null:
//              none) in the attention mask; any rope_scaling is refused
//   "phi3"     Phi3ForCausalLM (Phi-3-mini shapes): Llama's decoder with fused qkv_proj and
//              gate_up_proj (split by the name table), sliding_window (absent or null: none);
//              grouped-query attention, su/longrope rope_scaling and resid_pdrop are refused
// Llama, Qwen2, Mistral and Phi-3 are rows of one decoder-family table (hf_model_folder.cpp).
// Other model types are refused with their name. The tensor names of the weights are
// mapped in lineage/hf_tensor_names.h. A tokenizer_config.json beside the tokenizer is
// digested too: its bos/eos/pad/mask tokens frame BPE sequences.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "spec/workspace.h"

namespace scion::spec {

struct HfModelFolder {
  Architecture architecture;
  std::vector<std::filesystem::path> files;  // every file digested, absolute, sorted
  std::string digest;                        // lowercase hex SHA-256 (see above)
};

// `folder` is absolute; `spelled` is the folder as the spec wrote it, which the tokenizer's
// vocab_file is relative to (like every path in a spec). Errors (kSpecError) name the file
// and key: a missing config.json, weights or tokenizer, a model_type not listed above, a
// missing or out-of-range hyperparameter, a key whose value scion does not run.
Result<HfModelFolder> read_hf_model_folder(const std::filesystem::path& folder,
                                           const std::string& spelled);

// The Architecture config.json's `text` describes (`file` names it in messages): what
// read_hf_model_folder reads from it. Errors (kSpecError) name the file and key, with the
// expected type for a value of the wrong JSON type.
Result<Architecture> hf_config_architecture(std::string_view text, const std::string& file);

// The shard file names model.safetensors.index.json's `text` lists, sorted, each once.
// Errors: not {"weight_map": {tensor: file name}}, or a name that is not a file of the
// folder itself ("", ".", "..", a path).
Result<std::vector<std::string>> hf_index_shards(std::string_view text, const std::string& file);

// Rows of the checkpoint's position table before position 0: padding_idx + 1 (config
// pad_token_id, default 1) for "roberta", 0 for the others.
Result<int> hf_position_offset(const std::filesystem::path& folder, std::string_view model_type);

// The weight files of a folder: model.safetensors, or the shards its index names (sorted,
// each once). Errors: neither exists, an index that is not {"weight_map": {name: file}},
// a shard that is missing or outside the folder.
Result<std::vector<std::filesystem::path>> hf_weight_files(const std::filesystem::path& folder);

}  // namespace scion::spec
