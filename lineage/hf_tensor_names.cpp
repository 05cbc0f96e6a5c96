#include "lineage/hf_tensor_names.h"

#include <cctype>
#include <iterator>
#include <vector>

namespace scion::lineage {

namespace {

struct NameRule {
  std::string_view scion;  // '#': layer number
  std::string_view hf;
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

struct NameTable {
  const NameRule* begin;
  const NameRule* end;
};

// The table of a model type; empty for types scion does not import.
NameTable rules_of(std::string_view model_type) {
  if (model_type == "bert") return {std::begin(kBertRules), std::end(kBertRules)};
  if (model_type == "llama") return {std::begin(kLlamaRules), std::end(kLlamaRules)};
  return {nullptr, nullptr};
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

HfTensorMapping skipped(std::string note) {
  HfTensorMapping out;
  out.kind = HfTensorMapping::Kind::kSkipped;
  out.note = std::move(note);
  return out;
}

std::string substitute(std::string_view pattern, const std::string& number) {
  std::string out(pattern);
  if (const std::size_t hash = out.find('#'); hash != std::string::npos)
    out.replace(hash, 1, number);
  return out;
}

}  // namespace

std::string hf_base_model_prefix(std::string_view model_type) {
  return model_type == "bert" ? "bert." : "";
}

HfTensorMapping map_hf_tensor(std::string_view model_type, std::string_view hf_name) {
  HfTensorMapping out;
  const NameTable table = rules_of(model_type);
  std::string name(hf_name);
  if (model_type == "bert") {
    if (name.starts_with("bert.")) name.erase(0, 5);
    if (name.ends_with("position_ids") || name.ends_with("token_type_ids"))
      return skipped("a buffer of the Hugging Face module, not a parameter");
    if (name.starts_with("cls.")) return skipped("BERT's pretraining head, which scion does not run");
  }
  if (model_type == "llama") {
    if (name.ends_with("rotary_emb.inv_freq"))
      return skipped("a buffer of the Hugging Face module (scion computes the frequencies)");
    if (!name.starts_with("model.") && name != "lm_head.weight") name = "model." + name;
  }
  for (const NameRule* rule = table.begin; rule != table.end; ++rule) {
    const NameRule& r = *rule;
    if (auto number = match(r.hf, name)) {
      out.kind = HfTensorMapping::Kind::kParameter;
      out.scion_name = substitute(r.scion, *number);
      return out;
    }
  }
  return out;
}

std::optional<std::string> hf_tensor_name(std::string_view model_type,
                                          std::string_view scion_name) {
  const NameTable table = rules_of(model_type);
  for (const NameRule* rule = table.begin; rule != table.end; ++rule)
    if (auto number = match(rule->scion, scion_name)) return substitute(rule->hf, *number);
  return std::nullopt;
}

}  // namespace scion::lineage
