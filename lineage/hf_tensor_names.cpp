#include "lineage/hf_tensor_names.h"

#include <cctype>
#include <span>
#include <vector>

namespace scion::lineage {

namespace {

// How a checkpoint tensor's values become the scion parameter's.
enum class Layout {
  kAsIs,
  kConv1D,     // (in, out): transposed
  kFused,      // one of the equal parts of a fused tensor along the output dimension (the
               // rules that name the same tensor, in order: GPT-2's c_attn, Phi-3's qkv_proj)
  kFusedConv,  // the same, of a Conv1D weight
};

struct NameRule {
  std::string_view scion;  // '#': layer number
  std::string_view hf;
  Layout layout = Layout::kAsIs;
};

constexpr NameRule kBertRules[] = {
    {"tok_emb.weight", "embeddings.word_embeddings.weight"},
    {"pos_emb.weight", "embeddings.position_embeddings.weight"},
    {"type_emb.weight", "embeddings.token_type_embeddings.weight"},
    {"emb_ln.weight", "embeddings.LayerNorm.weight"},
    {"emb_ln.bias", "embeddings.LayerNorm.bias"},
    {"blk.#.attn_q.weight", "encoder.layer.#.attention.self.query.weight"},
    {"blk.#.attn_q.bias", "encoder.layer.#.attention.self.query.bias"},
    {"blk.#.attn_k.weight", "encoder.layer.#.attention.self.key.weight"},
    {"blk.#.attn_k.bias", "encoder.layer.#.attention.self.key.bias"},
    {"blk.#.attn_v.weight", "encoder.layer.#.attention.self.value.weight"},
    {"blk.#.attn_v.bias", "encoder.layer.#.attention.self.value.bias"},
    {"blk.#.attn_o.weight", "encoder.layer.#.attention.output.dense.weight"},
    {"blk.#.attn_o.bias", "encoder.layer.#.attention.output.dense.bias"},
    {"blk.#.ln1.weight", "encoder.layer.#.attention.output.LayerNorm.weight"},
    {"blk.#.ln1.bias", "encoder.layer.#.attention.output.LayerNorm.bias"},
    {"blk.#.ffn_in.weight", "encoder.layer.#.intermediate.dense.weight"},
    {"blk.#.ffn_in.bias", "encoder.layer.#.intermediate.dense.bias"},
    {"blk.#.ffn_out.weight", "encoder.layer.#.output.dense.weight"},
    {"blk.#.ffn_out.bias", "encoder.layer.#.output.dense.bias"},
    {"blk.#.ln2.weight", "encoder.layer.#.output.LayerNorm.weight"},
    {"blk.#.ln2.bias", "encoder.layer.#.output.LayerNorm.bias"},
    {"pooler.weight", "pooler.dense.weight"},
    {"pooler.bias", "pooler.dense.bias"},
};

// LlamaForCausalLM's names; a LlamaModel saved alone lacks the "model." prefix.
constexpr NameRule kLlamaRules[] = {
    {"tok_emb.weight", "model.embed_tokens.weight"},
    {"blk.#.ln1.weight", "model.layers.#.input_layernorm.weight"},
    {"blk.#.attn_q.weight", "model.layers.#.self_attn.q_proj.weight"},
    {"blk.#.attn_k.weight", "model.layers.#.self_attn.k_proj.weight"},
    {"blk.#.attn_v.weight", "model.layers.#.self_attn.v_proj.weight"},
    {"blk.#.attn_o.weight", "model.layers.#.self_attn.o_proj.weight"},
    {"blk.#.ln2.weight", "model.layers.#.post_attention_layernorm.weight"},
    {"blk.#.ffn_gate.weight", "model.layers.#.mlp.gate_proj.weight"},
    {"blk.#.ffn_in.weight", "model.layers.#.mlp.up_proj.weight"},
    {"blk.#.ffn_out.weight", "model.layers.#.mlp.down_proj.weight"},
    {"ln_f.weight", "model.norm.weight"},
    {"lm_head.weight", "lm_head.weight"},
};

// Qwen2ForCausalLM's: Llama's names, and biases on q_proj, k_proj and v_proj only.
constexpr NameRule kQwen2Rules[] = {
    {"tok_emb.weight", "model.embed_tokens.weight"},
    {"blk.#.ln1.weight", "model.layers.#.input_layernorm.weight"},
    {"blk.#.attn_q.weight", "model.layers.#.self_attn.q_proj.weight"},
    {"blk.#.attn_q.bias", "model.layers.#.self_attn.q_proj.bias"},
    {"blk.#.attn_k.weight", "model.layers.#.self_attn.k_proj.weight"},
    {"blk.#.attn_k.bias", "model.layers.#.self_attn.k_proj.bias"},
    {"blk.#.attn_v.weight", "model.layers.#.self_attn.v_proj.weight"},
    {"blk.#.attn_v.bias", "model.layers.#.self_attn.v_proj.bias"},
    {"blk.#.attn_o.weight", "model.layers.#.self_attn.o_proj.weight"},
    {"blk.#.ln2.weight", "model.layers.#.post_attention_layernorm.weight"},
    {"blk.#.ffn_gate.weight", "model.layers.#.mlp.gate_proj.weight"},
    {"blk.#.ffn_in.weight", "model.layers.#.mlp.up_proj.weight"},
    {"blk.#.ffn_out.weight", "model.layers.#.mlp.down_proj.weight"},
    {"ln_f.weight", "model.norm.weight"},
    {"lm_head.weight", "lm_head.weight"},
};

// Phi3ForCausalLM's: qkv_proj holds q, k and v, gate_up_proj the gate and then up, each
// split into equal parts along the output dimension (rows) and joined again on export.
constexpr NameRule kPhi3Rules[] = {
    {"tok_emb.weight", "model.embed_tokens.weight"},
    {"blk.#.ln1.weight", "model.layers.#.input_layernorm.weight"},
    {"blk.#.attn_q.weight", "model.layers.#.self_attn.qkv_proj.weight", Layout::kFused},
    {"blk.#.attn_k.weight", "model.layers.#.self_attn.qkv_proj.weight", Layout::kFused},
    {"blk.#.attn_v.weight", "model.layers.#.self_attn.qkv_proj.weight", Layout::kFused},
    {"blk.#.attn_o.weight", "model.layers.#.self_attn.o_proj.weight"},
    {"blk.#.ln2.weight", "model.layers.#.post_attention_layernorm.weight"},
    {"blk.#.ffn_gate.weight", "model.layers.#.mlp.gate_up_proj.weight", Layout::kFused},
    {"blk.#.ffn_in.weight", "model.layers.#.mlp.gate_up_proj.weight", Layout::kFused},
    {"blk.#.ffn_out.weight", "model.layers.#.mlp.down_proj.weight"},
    {"ln_f.weight", "model.norm.weight"},
    {"lm_head.weight", "lm_head.weight"},
};

constexpr NameRule kGpt2Rules[] = {
    {"tok_emb.weight", "wte.weight"},
    {"pos_emb.weight", "wpe.weight"},
    {"blk.#.ln1.weight", "h.#.ln_1.weight"},
    {"blk.#.ln1.bias", "h.#.ln_1.bias"},
    {"blk.#.attn_q.weight", "h.#.attn.c_attn.weight", Layout::kFusedConv},
    {"blk.#.attn_k.weight", "h.#.attn.c_attn.weight", Layout::kFusedConv},
    {"blk.#.attn_v.weight", "h.#.attn.c_attn.weight", Layout::kFusedConv},
    {"blk.#.attn_q.bias", "h.#.attn.c_attn.bias", Layout::kFused},
    {"blk.#.attn_k.bias", "h.#.attn.c_attn.bias", Layout::kFused},
    {"blk.#.attn_v.bias", "h.#.attn.c_attn.bias", Layout::kFused},
    {"blk.#.attn_o.weight", "h.#.attn.c_proj.weight", Layout::kConv1D},
    {"blk.#.attn_o.bias", "h.#.attn.c_proj.bias"},
    {"blk.#.ln2.weight", "h.#.ln_2.weight"},
    {"blk.#.ln2.bias", "h.#.ln_2.bias"},
    {"blk.#.ffn_in.weight", "h.#.mlp.c_fc.weight", Layout::kConv1D},
    {"blk.#.ffn_in.bias", "h.#.mlp.c_fc.bias"},
    {"blk.#.ffn_out.weight", "h.#.mlp.c_proj.weight", Layout::kConv1D},
    {"blk.#.ffn_out.bias", "h.#.mlp.c_proj.bias"},
    {"ln_f.weight", "ln_f.weight"},
    {"ln_f.bias", "ln_f.bias"},
};

std::span<const NameRule> rules_of(std::string_view model_type) {
  if (model_type == "bert" || model_type == "roberta") return kBertRules;
  if (model_type == "gpt2") return kGpt2Rules;
  // MistralForCausalLM's names are Llama's (its sliding window has no tensor).
  if (model_type == "llama" || model_type == "mistral") return kLlamaRules;
  if (model_type == "qwen2") return kQwen2Rules;
  if (model_type == "phi3") return kPhi3Rules;
  return {};
}

// The Llama-shaped decoders, whose causal-LM wrapper puts the model under "model.".
bool llama_shaped(std::string_view model_type) {
  return model_type == "llama" || model_type == "qwen2" || model_type == "mistral" ||
         model_type == "phi3";
}

// A tensor scion skips on purpose, with why; nullopt for the others.
std::optional<std::string> skipped(std::string_view model_type, std::string_view name) {
  if (llama_shaped(model_type)) {
    if (name.ends_with("rotary_emb.inv_freq"))
      return "a buffer of the Hugging Face module (scion computes the frequencies)";
    return std::nullopt;
  }
  if (model_type == "gpt2") {
    if (name == "lm_head.weight") return "GPT-2's LM head, tied to wte.weight";
    if (name.ends_with(".attn.bias") || name.ends_with(".attn.masked_bias"))
      return "a causal-mask buffer of the Hugging Face module, not a parameter";
    return std::nullopt;
  }
  if (name.ends_with("position_ids") || name.ends_with("token_type_ids"))
    return "a buffer of the Hugging Face module, not a parameter";
  if (model_type == "bert" && name.starts_with("cls."))
    return "BERT's pretraining head, which scion does not run";
  if (model_type == "roberta" && name.starts_with("lm_head."))
    return "RoBERTa's masked-LM head, which scion does not run";
  return std::nullopt;
}

// Matches `name` against `pattern` ('#' standing for a decimal number); the number, or ""
// for a pattern without '#', when it matches.
std::optional<std::string> match(std::string_view pattern, std::string_view name) {
  const std::size_t hash = pattern.find('#');
  if (hash == std::string_view::npos)
    return pattern == name ? std::optional<std::string>("") : std::nullopt;
  const std::string_view head = pattern.substr(0, hash), tail = pattern.substr(hash + 1);
  if (!name.starts_with(head) || name.size() <= head.size() + tail.size() ||
      !name.ends_with(tail))
    return std::nullopt;
  const std::string_view digits = name.substr(head.size(), name.size() - head.size() - tail.size());
  if (digits.size() > 6) return std::nullopt;
  for (char c : digits)
    if (!std::isdigit(static_cast<unsigned char>(c))) return std::nullopt;
  return std::string(digits);
}


std::string substitute(std::string_view pattern, const std::string& number) {
  std::string out(pattern);
  if (const std::size_t hash = out.find('#'); hash != std::string::npos)
    out.replace(hash, 1, number);
  return out;
}

}  // namespace

std::string hf_base_model_prefix(std::string_view model_type) {
  if (model_type == "bert") return "bert.";
  if (model_type == "roberta") return "roberta.";
  if (model_type == "gpt2") return "transformer.";
  return "";
}

HfTensorMapping map_hf_tensor(std::string_view model_type, std::string_view hf_name) {
  HfTensorMapping out;
  const std::span<const NameRule> rules = rules_of(model_type);
  if (rules.empty()) return out;
  std::string name(hf_name);
  if (const std::string prefix = hf_base_model_prefix(model_type); name.starts_with(prefix))
    name.erase(0, prefix.size());
  // A LlamaModel saved without the causal-LM wrapper lacks the "model." prefix.
  if (llama_shaped(model_type) && !name.starts_with("model.") && name != "lm_head.weight")
    name = "model." + name;
  if (auto why = skipped(model_type, name)) {
    out.kind = HfTensorMapping::Kind::kSkipped;
    out.note = *why;
    return out;
  }
  for (const NameRule& rule : rules) {
    auto number = match(rule.hf, name);
    if (!number) continue;
    const std::string scion = substitute(rule.scion, *number);
    if (out.kind == HfTensorMapping::Kind::kUnknown) {
      out.kind = HfTensorMapping::Kind::kParameter;
      out.scion_name = scion;
      out.conv1d = rule.layout == Layout::kConv1D || rule.layout == Layout::kFusedConv;
      out.position_rows = model_type == "roberta" && rule.scion == "pos_emb.weight";
    }
    if (rule.layout == Layout::kFused || rule.layout == Layout::kFusedConv)
      out.fused.push_back(scion);
  }
  return out;
}

std::optional<std::string> hf_tensor_name(std::string_view model_type,
                                          std::string_view scion_name) {
  for (const NameRule& rule : rules_of(model_type))
    if (auto number = match(rule.scion, scion_name)) return substitute(rule.hf, *number);
  return std::nullopt;
}

}  // namespace scion::lineage
