#include "spec/hf_model_folder.h"

#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <set>

#include "base/json_number_range.h"
#include "base/json_value.h"
#include "base/regular_file.h"
#include "spec/file_digest.h"

namespace scion::spec {

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// The text of `file`. Errors: kNotFound when it cannot be read.
Result<std::string> read_text(const fs::path& file) {
  auto text = read_regular_file(file, FollowLinks::kYes);
  if (!text && text.status().code() == StatusCode::kIoError)
    return not_found(fmt::format("cannot read '{}'", file.string()));
  return text;
}

// `text` as a JSON object. Errors: a spec error when it is not one (parse_json_document's
// own, which names the field, for a number beyond a 64-bit float).
Result<json> parse_object(std::string_view text, const std::string& file) {
  if (const auto number = find_out_of_range_number(text))
    return spec_error(describe_out_of_range_number(file, *number) +
                      "; re-save the model with save_pretrained()");
  auto parsed = parse_json_document(text, file);
  if (!parsed || !parsed->is_object())
    return spec_error(
        fmt::format("'{}' is not a JSON object; re-save the model with "
                    "save_pretrained()",
                    file));
  return parsed;
}

// The file's JSON object, read whole.
Result<json> read_json(const fs::path& file) {
  auto text = read_text(file);
  if (!text) return text.status();
  return parse_object(*text, file.string());
}

// Reads the positive integer config[key], or `fallback` when absent and fallback > 0.
Status read_count(const JsonValue& config, const char* key, int max, int fallback, int& out,
                  const char* family = "BERT") {
  if (!config.has(key)) {
    if (fallback > 0) {
      out = fallback;
      return Status::ok();
    }
    return spec_error(
        fmt::format("{}: '{}' is missing; a {} config needs it", config.where(), key, family));
  }
  auto value = config.integer_or(key, fallback, 1, max);
  if (!value) return value.status();
  out = static_cast<int>(*value);
  return Status::ok();
}

// One integer field of config.json: where it lands, its largest accepted value, and its
// default (0: required).
struct CountField {
  const char* key;
  int* out;
  int max;
  int fallback;
};

// Reads every field of `fields`, stopping at the first error.
Status read_counts(const JsonValue& config, const char* family,
                   std::initializer_list<CountField> fields) {
  for (const CountField& f : fields)
    SCION_RETURN_IF_ERROR(read_count(config, f.key, f.max, f.fallback, *f.out, family));
  return Status::ok();
}

// RoBERTa's padding_idx (config pad_token_id, default 1).
Result<int> roberta_padding_idx(const JsonValue& config) {
  auto pad = config.integer_or("pad_token_id", 1, 0, 1 << 20);
  if (!pad) return pad.status();
  return static_cast<int>(*pad);
}

// A float config[key] (`fallback` when absent or null).
Result<float> read_float(const JsonValue& config, const char* key, float fallback) {
  auto value = config.number_or(key, fallback);
  if (!value) return value.status();
  return static_cast<float>(*value);
}

// The layer-norm epsilon (`eps_key`, default `eps_default`) and the hidden dropout
// (`dropout_key`, default 0.1) of a BERT- or GPT-2-style config, under the names each
// family gives them.
Status read_eps_and_dropout(const JsonValue& config, const char* eps_key, float eps_default,
                            const char* dropout_key, Architecture& a) {
  auto eps = read_float(config, eps_key, eps_default);
  if (!eps) return eps.status();
  auto dropout = read_float(config, dropout_key, 0.1f);
  if (!dropout) return dropout.status();
  a.norm_eps = *eps;
  a.dropout = *dropout;
  if (!(a.norm_eps > 0) || !(a.dropout >= 0 && a.dropout < 1))
    return spec_error(
        fmt::format("{}: {} must be > 0 and {} in [0, 1)", config.where(), eps_key, dropout_key));
  return Status::ok();
}

// Each of `keys` must be false (or absent): a feature scion does not run.
Status refuse_true(const JsonValue& config, std::initializer_list<const char*> keys,
                   const std::string& why) {
  for (const char* key : keys) {
    auto on = config.bool_or(key, false);
    if (!on) return on.status();
    if (*on) return spec_error(fmt::format("{}: {} is true; {}", config.where(), key, why));
  }
  return Status::ok();
}

// BERT and RoBERTa (`type`): the same encoder, RoBERTa's positions offset (the checkpoint
// reader drops the table's first padding_idx + 1 rows, so max_length is what remains).
Result<Architecture> bert_architecture(const JsonValue& config, const std::string& type) {
  Architecture a;
  a.kind = ArchitectureKind::kEncoder;
  a.norm = NormPlacement::kPost;
  a.tie_embeddings = true;
  a.pooler = true;
  a.hf_model_type = type;
  const std::string file = std::string(config.file());
  SCION_RETURN_IF_ERROR(read_counts(config, "BERT",
                                    {{"num_hidden_layers", &a.layers, 1024, 0},
                                     {"hidden_size", &a.width, 1 << 16, 0},
                                     {"num_attention_heads", &a.heads, 1 << 12, 0},
                                     {"intermediate_size", &a.ffn_width, 1 << 20, 0},
                                     {"vocab_size", &a.vocab_size, 1 << 22, 0},
                                     {"max_position_embeddings", &a.max_length, 1 << 20, 512},
                                     {"type_vocab_size", &a.type_vocab_size, 1 << 10, 2}}));
  if (a.width % a.heads != 0)
    return spec_error(fmt::format("'{}': num_attention_heads {} does not divide hidden_size {}",
                                  file, a.heads, a.width));
  if (type == "roberta") {
    auto pad = roberta_padding_idx(config);
    if (!pad.is_ok()) return pad.status();
    if (a.max_length <= *pad + 1)
      return spec_error(
          fmt::format("'{}': max_position_embeddings {} leaves no position after "
                      "RoBERTa's padding_idx + 1 = {}",
                      file, a.max_length, *pad + 1));
    a.max_length -= *pad + 1;
  }
  auto act = config.string_or("hidden_act", "gelu");
  if (!act) return act.status();
  if (*act == "gelu") {
    a.activation = Activation::kGeluErf;
  } else if (*act == "gelu_new" || *act == "gelu_pytorch_tanh") {
    a.activation = Activation::kGeluTanh;
  } else {
    return spec_error(
        fmt::format("'{}': hidden_act '{}' is not supported; scion runs gelu "
                    "(erf), gelu_new and gelu_pytorch_tanh",
                    file, *act));
  }
  auto positions = config.string_or("position_embedding_type", "absolute");
  if (!positions) return positions.status();
  if (*positions != "absolute")
    return spec_error(
        fmt::format("'{}': position_embedding_type '{}' is not supported; scion "
                    "runs absolute (learned) positions",
                    file, *positions));
  SCION_RETURN_IF_ERROR(refuse_true(config, {"is_decoder", "add_cross_attention"},
                                    "a BERT decoder is not supported; import an encoder"));
  SCION_RETURN_IF_ERROR(
      read_eps_and_dropout(config, "layer_norm_eps", 1e-12f, "hidden_dropout_prob", a));
  return a;
}

// GPT-2 (GPT2Model / GPT2LMHeadModel): pre-norm decoder, learned positions, tied head.
Result<Architecture> gpt2_architecture(const JsonValue& config) {
  Architecture a;
  a.kind = ArchitectureKind::kDecoder;
  a.norm = NormPlacement::kPre;
  a.tie_embeddings = true;
  a.hf_model_type = "gpt2";
  const std::string file = std::string(config.file());
  SCION_RETURN_IF_ERROR(read_counts(config, "GPT-2",
                                    {{"n_layer", &a.layers, 1024, 0},
                                     {"n_embd", &a.width, 1 << 16, 0},
                                     {"n_head", &a.heads, 1 << 12, 0},
                                     {"vocab_size", &a.vocab_size, 1 << 22, 0},
                                     {"n_positions", &a.max_length, 1 << 20, 1024}}));
  a.ffn_width = 4 * a.width;
  if (config.has("n_inner"))
    SCION_RETURN_IF_ERROR(read_count(config, "n_inner", 1 << 20, 0, a.ffn_width, "GPT-2"));
  if (a.width % a.heads != 0)
    return spec_error(
        fmt::format("'{}': n_head {} does not divide n_embd {}", file, a.heads, a.width));
  auto act = config.string_or("activation_function", "gelu_new");
  if (!act) return act.status();
  if (*act == "gelu_new" || *act == "gelu_pytorch_tanh") {
    a.activation = Activation::kGeluTanh;
  } else if (*act == "gelu") {
    a.activation = Activation::kGeluErf;
  } else {
    return spec_error(
        fmt::format("'{}': activation_function '{}' is not supported; scion runs "
                    "gelu_new, gelu_pytorch_tanh and gelu",
                    file, *act));
  }
  SCION_RETURN_IF_ERROR(refuse_true(
      config, {"scale_attn_by_inverse_layer_idx", "reorder_and_upcast_attn", "add_cross_attention"},
      "scion runs GPT-2's attention without it"));
  auto scaled = config.bool_or("scale_attn_weights", true);
  if (!scaled) return scaled.status();
  if (!*scaled)
    return spec_error(
        fmt::format("'{}': scale_attn_weights is false; scion scales attention "
                    "by 1/sqrt(head width) as GPT-2 does",
                    file));
  SCION_RETURN_IF_ERROR(
      read_eps_and_dropout(config, "layer_norm_epsilon", 1e-5f, "resid_pdrop", a));
  return a;
}

// A positive number config[key], or `fallback` when absent or null.
Status read_positive(const JsonValue& config, const char* key, float fallback, float& out) {
  auto value = config.number_or(key, fallback);
  if (!value) return value.status();
  if (config.has(key) && !(*value > 0))
    return config.member(key)->wrong_type("a number greater than 0");
  out = static_cast<float>(*value);
  return Status::ok();
}

// The Llama-shaped decoders (pre-norm, RMSNorm, rotary positions, SwiGLU, grouped-query
// attention): one row per model_type, with what each adds to Llama's arithmetic and the
// defaults transformers' config class gives keys that config.json leaves out.
struct DecoderFamily {
  std::string_view model_type;
  const char* name;          // in messages
  int max_positions;         // max_position_embeddings when absent
  int kv_heads;              // num_key_value_heads when absent; 0: one per attention head
  bool qkv_bias;             // q_proj, k_proj and v_proj have biases (Qwen2)
  int sliding_window;        // sliding_window when absent (0: none; null is none too), or
                             // -1 where the family has no window scion honours
  const char* rope_refusal;  // why rope_scaling other than null is refused; null: linear
                             // and dynamic are honoured (Llama)
  bool fused_qkv;            // qkv_proj holds q, k and v in equal parts (Phi-3)
};

constexpr DecoderFamily kDecoderFamilies[] = {
    {"llama", "Llama", 2048, 0, false, -1, nullptr, false},
    {"qwen2", "Qwen2", 32768, 32, true, -1,
     "transformers 4.40's Qwen2ForCausalLM ignores rope_scaling, so any scaling would be a "
     "guess",
     false},
    {"mistral", "Mistral", 4096 * 32, 8, false, 4096,
     "transformers 4.40's MistralForCausalLM ignores rope_scaling, so any scaling would be a "
     "guess",
     false},
    {"phi3", "Phi-3", 4096, 0, false, 0,
     "su and longrope (Phi-3's 128k variants) rescale each frequency by the sequence's "
     "length, which scion does not run",
     true},
};

const DecoderFamily* decoder_family(std::string_view model_type) {
  for (const DecoderFamily& f : kDecoderFamilies)
    if (f.model_type == model_type) return &f;
  return nullptr;
}

// rope_scaling's type ("rope_type", else "type"), "" for none.
Result<std::string> rope_scaling_type(const JsonValue& rope) {
  auto type = rope.string_or("rope_type", "");
  if (!type) return type.status();
  if (type->empty()) return rope.string_or("type", "");
  return type;
}

// rope_scaling: null (none), linear (positions divided by the factor) or dynamic (NTK
// scaling, which transformers applies only past max_position_embeddings, where scion
// refuses sequences, so it equals none here). The rest change the frequencies themselves
// and are refused by name, as is any scaling for a family whose transformers class
// ignores the key.
Status read_rope_scaling(const JsonValue& config, const DecoderFamily& family, Architecture& a) {
  a.rope_scale = 1.0f;
  auto scaling = config.object_or_null("rope_scaling");
  if (!scaling) return scaling.status();
  if (!*scaling) return Status::ok();
  const JsonValue& rope = **scaling;
  auto type = rope_scaling_type(rope);
  if (!type) return type.status();
  if (*type == "default") return Status::ok();
  if (family.rope_refusal)
    return spec_error(
        fmt::format("'{}': rope_scaling type '{}' is not supported for {}: {}; scion runs {}'s "
                    "unscaled rotary frequencies (rope_scaling null)",
                    config.file(), *type, family.model_type, family.rope_refusal, family.name));
  if (*type != "linear" && *type != "dynamic")
    return spec_error(
        fmt::format("'{}': rope_scaling type '{}' is not supported; scion runs "
                    "none, linear and dynamic (llama3, yarn, longrope and su "
                    "change the rotary frequencies and are refused)",
                    config.file(), *type));
  float factor = 1.0f;
  SCION_RETURN_IF_ERROR(read_positive(rope, "factor", 0.0f, factor));
  if (!(factor >= 1.0f))
    return spec_error(fmt::format("{}.factor must be a number >= 1", rope.where()));
  if (*type == "linear") a.rope_scale = factor;
  return Status::ok();
}

// The sliding window: Mistral's and Phi-3's `sliding_window` (absent: the family's
// default, null: none). Qwen2 reads `use_sliding_window` instead and is refused when it is
// true (its window applies to some layers only, max_window_layers).
Status read_sliding_window(const JsonValue& config, const DecoderFamily& family, Architecture& a) {
  a.sliding_window = 0;
  if (family.model_type == "qwen2")
    return refuse_true(config, {"use_sliding_window"},
                       "scion runs Qwen2 with full attention in every layer (as Qwen2 and "
                       "Qwen2.5 checkpoints are configured); set it to false");
  if (family.sliding_window < 0) return Status::ok();
  // Null (Mistral 7B v0.2 on) is no window; absent is transformers' default.
  if (config.raw().contains("sliding_window") && config.raw().at("sliding_window").is_null())
    return Status::ok();
  auto window = config.integer_or("sliding_window", family.sliding_window, 1, 1 << 30);
  if (!window) return window.status();
  a.sliding_window = static_cast<int>(*window);
  return Status::ok();
}

// Phi-3: q, k and v are equal parts of qkv_proj (scion splits it so), and dropout on the
// residual branches (resid_pdrop) is not run; embd_pdrop is unused by transformers'
// Phi3Model itself.
Status check_phi3(const JsonValue& config, const Architecture& a) {
  if (a.key_value_heads() != a.heads)
    return spec_error(fmt::format(
        "'{}': num_key_value_heads {} differs from num_attention_heads {}; scion splits "
        "Phi-3's fused qkv_proj into equal q, k and v parts (Phi-3-mini's shape) and does not "
        "run grouped-query attention through it yet",
        config.file(), a.key_value_heads(), a.heads));
  auto dropout = config.number_or("resid_pdrop", 0.0);
  if (!dropout) return dropout.status();
  if (*dropout != 0.0)
    return spec_error(fmt::format(
        "'{}': resid_pdrop is {}; scion trains Phi-3 without residual dropout (0.0, as the "
        "released configs): set it to 0.0",
        config.file(), *dropout));
  return Status::ok();
}

// The sizes of a Llama-shaped decoder, checked against each other.
Status read_decoder_shape(const JsonValue& config, const DecoderFamily& family, Architecture& a) {
  const std::string file = std::string(config.file());
  SCION_RETURN_IF_ERROR(
      read_counts(config, family.name,
                  {{"num_hidden_layers", &a.layers, 1024, 0},
                   {"hidden_size", &a.width, 1 << 16, 0},
                   {"num_attention_heads", &a.heads, 1 << 12, 0},
                   {"intermediate_size", &a.ffn_width, 1 << 20, 0},
                   {"vocab_size", &a.vocab_size, 1 << 22, 0},
                   {"max_position_embeddings", &a.max_length, 1 << 20, family.max_positions}}));
  SCION_RETURN_IF_ERROR(read_count(config, "num_key_value_heads", 1 << 12,
                                   family.kv_heads > 0 ? family.kv_heads : a.heads, a.kv_heads,
                                   family.name));
  if (a.width % a.heads != 0)
    return spec_error(fmt::format("'{}': num_attention_heads {} does not divide hidden_size {}",
                                  file, a.heads, a.width));
  if (a.heads % a.kv_heads != 0)
    return spec_error(
        fmt::format("'{}': num_key_value_heads {} does not divide "
                    "num_attention_heads {}",
                    file, a.kv_heads, a.heads));
  if (a.head_dim() % 2 != 0)
    return spec_error(
        fmt::format("'{}': the head dimension {} is odd; rotary positions "
                    "rotate channel pairs",
                    file, a.head_dim()));
  auto head_dim = config.integer_or("head_dim", a.head_dim(), 1, 1 << 16);
  if (!head_dim) return head_dim.status();
  if (*head_dim != a.head_dim())
    return spec_error(
        fmt::format("'{}': head_dim {} differs from hidden_size / "
                    "num_attention_heads = {}; scion runs heads of that width",
                    file, *head_dim, a.head_dim()));
  return Status::ok();
}

// A Llama-shaped decoder (LlamaForCausalLM, Qwen2ForCausalLM, MistralForCausalLM,
// Phi3ForCausalLM): pre-norm with RMSNorm, rotary positions, the SwiGLU FFN, grouped-query
// attention, and the family's additions (Qwen2's q/k/v biases, the sliding window of
// Mistral and Phi-3; Phi-3's fused linears are a matter of its name table).
Result<Architecture> decoder_architecture(const JsonValue& config, const DecoderFamily& family) {
  Architecture a;
  a.kind = ArchitectureKind::kDecoder;
  a.norm = NormPlacement::kPre;
  a.norm_kind = NormKind::kRmsNorm;
  a.positions = PositionKind::kRotary;
  a.activation = Activation::kSwiGlu;
  a.linear_bias = false;
  a.qkv_bias = family.qkv_bias;
  a.pooler = false;
  a.type_vocab_size = 0;
  a.dropout = 0.0f;  // no hidden dropout; attention_dropout is on probabilities
  a.hf_model_type = std::string(family.model_type);
  const std::string file = std::string(config.file());
  SCION_RETURN_IF_ERROR(read_decoder_shape(config, family, a));
  auto act = config.string_or("hidden_act", "silu");
  if (!act) return act.status();
  if (*act != "silu" && *act != "swish")
    return spec_error(
        fmt::format("'{}': hidden_act '{}' is not supported for {}; scion "
                    "runs silu (SwiGLU)",
                    file, *act, family.model_type));
  SCION_RETURN_IF_ERROR(refuse_true(
      config, {"attention_bias", "mlp_bias"},
      fmt::format("scion runs {}'s linear layers {}", family.name,
                  family.qkv_bias ? "with biases on q, k and v only" : "without biases")));
  SCION_RETURN_IF_ERROR(read_positive(config, "rms_norm_eps", 1e-6f, a.norm_eps));
  SCION_RETURN_IF_ERROR(read_positive(config, "rope_theta", 10000.0f, a.rope_theta));
  SCION_RETURN_IF_ERROR(read_rope_scaling(config, family, a));
  SCION_RETURN_IF_ERROR(read_sliding_window(config, family, a));
  if (family.fused_qkv) SCION_RETURN_IF_ERROR(check_phi3(config, a));
  auto tied = config.bool_or("tie_word_embeddings", false);
  if (!tied) return tied.status();
  a.tie_embeddings = *tied;
  return a;
}

}  // namespace

Result<int> hf_position_offset(const fs::path& folder, std::string_view model_type) {
  if (model_type != "roberta") return 0;
  const fs::path file = folder / "config.json";
  auto config = read_json(file);
  if (!config) return config.status();
  const std::string name = file.string();
  auto pad = roberta_padding_idx(JsonValue(*config, name));
  if (!pad.is_ok()) return pad.status();
  return *pad + 1;
}

Result<std::vector<std::string>> hf_index_shards(std::string_view text, const std::string& file) {
  auto parsed = parse_object(text, file);
  if (!parsed) return parsed.status();
  auto map = JsonValue(*parsed, file).required("weight_map");
  if (!map) return map.status();
  SCION_RETURN_IF_ERROR(map->expect_object());
  std::set<std::string> shards;
  for (const auto& [tensor, name_value] : map->members()) {
    auto shard = name_value.as_string();
    if (!shard) return shard.status();
    const std::string& name = *shard;
    if (name.empty() || name.find('/') != std::string::npos || name == "." || name == "..")
      return name_value.wrong_type("the name of a file in the folder");
    shards.insert(name);
  }
  return std::vector<std::string>(shards.begin(), shards.end());
}

Result<std::vector<fs::path>> hf_weight_files(const fs::path& folder) {
  const fs::path single = folder / "model.safetensors";
  const fs::path index = folder / "model.safetensors.index.json";
  if (fs::is_regular_file(single)) return std::vector<fs::path>{single};
  if (!fs::is_regular_file(index))
    return spec_error(fmt::format("'{}' holds neither model.safetensors nor "
                                  "model.safetensors.index.json; save the model with "
                                  "save_pretrained(safe_serialization=True)",
                                  folder.string()));
  auto text = read_text(index);
  if (!text) return text.status();
  auto shards = hf_index_shards(*text, index.string());
  if (!shards) return shards.status();
  std::vector<fs::path> files;
  for (const std::string& shard : *shards) {
    if (!fs::is_regular_file(folder / shard))
      return spec_error(fmt::format("'{}' names shard '{}', which is not in the folder",
                                    index.string(), shard));
    files.push_back(folder / shard);
  }
  return files;
}

Result<Architecture> hf_config_architecture(std::string_view text, const std::string& file) {
  auto parsed = parse_object(text, file);
  if (!parsed) return parsed.status();
  const JsonValue config(*parsed, file);
  auto model_type = config.string_or("model_type", "");
  if (!model_type) return model_type.status();
  const std::string& type = *model_type;
  if (const DecoderFamily* family = decoder_family(type))
    return decoder_architecture(config, *family);
  if (type != "bert" && type != "roberta" && type != "gpt2")
    return spec_error(
        fmt::format("'{}': model_type '{}' is not supported yet; scion imports "
                    "model_type bert (BERT, MiniLM), roberta, gpt2, llama (SmolLM, "
                    "TinyLlama, Llama 2 and 3 shapes), qwen2 (Qwen2, Qwen2.5), mistral and "
                    "phi3",
                    file, type));
  return type == "gpt2" ? gpt2_architecture(config) : bert_architecture(config, type);
}

Result<HfModelFolder> read_hf_model_folder(const fs::path& folder, const std::string& spelled) {
  HfModelFolder out;
  const fs::path config_file = folder / "config.json";
  if (!fs::is_regular_file(config_file))
    return spec_error(fmt::format("'{}' is a folder without config.json; a Hugging Face model "
                                  "folder needs config.json, model.safetensors and "
                                  "tokenizer.json (or vocab.txt)",
                                  folder.string()));
  auto text = read_text(config_file);
  if (!text) return text.status();
  auto arch = hf_config_architecture(*text, config_file.string());
  if (!arch) return arch.status();
  const std::string type = arch->hf_model_type;
  out.architecture = std::move(arch).value();

  auto weights = hf_weight_files(folder);
  if (!weights) return weights.status();
  out.files = {config_file};
  out.files.insert(out.files.end(), weights->begin(), weights->end());
  if (fs::is_regular_file(folder / "model.safetensors.index.json") &&
      !fs::is_regular_file(folder / "model.safetensors"))
    out.files.push_back(folder / "model.safetensors.index.json");

  // BERT's WordPiece may come as vocab.txt; byte-level BPE only from tokenizer.json.
  const bool bpe = type != "bert";
  const char* tokenizer_name = nullptr;
  for (const char* candidate : {"tokenizer.json", "vocab.txt"})
    if (!tokenizer_name && !(bpe && std::string_view(candidate) == "vocab.txt") &&
        fs::is_regular_file(folder / candidate))
      tokenizer_name = candidate;
  if (!tokenizer_name)
    return spec_error(fmt::format("'{}' holds {}; save the tokenizer into the folder "
                                  "(tokenizer.save_pretrained)",
                                  folder.string(),
                                  bpe ? "no tokenizer.json" : "neither tokenizer.json nor vocab.txt"));
  out.files.push_back(folder / tokenizer_name);
  // Its bos/eos/pad/mask tokens frame sequences (runtime/text/bpe_tokenizer.h).
  if (fs::is_regular_file(folder / "tokenizer_config.json"))
    out.files.push_back(folder / "tokenizer_config.json");
  out.architecture.tokenizer.kind = bpe ? TokenizerKind::kBpe : TokenizerKind::kWordPiece;
  out.architecture.tokenizer.vocab_file = (fs::path(spelled) / tokenizer_name).string();

  std::sort(out.files.begin(), out.files.end());
  std::string listing;
  for (const fs::path& file : out.files) {
    auto sha = sha256_file(file);
    if (!sha) return sha.status();
    listing += file.filename().string() + " " + *sha + "\n";
  }
  out.digest = sha256_hex(listing);
  return out;
}

}  // namespace scion::spec
