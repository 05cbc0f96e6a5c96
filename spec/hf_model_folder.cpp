#include "spec/hf_model_folder.h"

#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "spec/file_digest.h"

namespace scion::spec {

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

Result<json> read_json(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) return not_found(fmt::format("cannot read '{}'", file.string()));
  json parsed = json::parse(in, nullptr, false);
  if (parsed.is_discarded() || !parsed.is_object())
    return spec_error(fmt::format("'{}' is not a JSON object; re-save the model with "
                                  "save_pretrained()",
                                  file.string()));
  return parsed;
}

// Reads the positive integer config[key], or `fallback` when absent and fallback > 0.
Status read_count(const json& config, const fs::path& file, const char* key, int max,
                  int fallback, int& out, const char* family = "BERT") {
  auto it = config.find(key);
  if (it == config.end()) {
    if (fallback > 0) {
      out = fallback;
      return Status::ok();
    }
    return spec_error(
        fmt::format("'{}' has no '{}'; a {} config needs it", file.string(), key, family));
  }
  if (!it->is_number_integer() || it->get<std::int64_t>() < 1 || it->get<std::int64_t>() > max)
    return spec_error(fmt::format("'{}': '{}' is {}, expected an integer from 1 to {}",
                                  file.string(), key, it->dump(), max));
  out = it->get<int>();
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
Status read_counts(const json& config, const fs::path& file, const char* family,
                   std::initializer_list<CountField> fields) {
  for (const CountField& f : fields)
    if (Status s = read_count(config, file, f.key, f.max, f.fallback, *f.out, family); !s.is_ok())
      return s;
  return Status::ok();
}

// RoBERTa's padding_idx (config pad_token_id, default 1).
Result<int> roberta_padding_idx(const json& config, const fs::path& file) {
  const json& pad = config.value("pad_token_id", json(1));
  if (!pad.is_number_integer() || pad.get<std::int64_t>() < 0 || pad.get<std::int64_t>() > 1 << 20)
    return spec_error(fmt::format("'{}': pad_token_id is {}, expected a token id",
                                  file.string(), pad.dump()));
  return pad.get<int>();
}

// The layer-norm epsilon (`eps_key`, default `eps_default`) and the hidden dropout
// (`dropout_key`, default 0.1) of a BERT- or GPT-2-style config, under the names each
// family gives them.
Status read_eps_and_dropout(const json& config, const fs::path& file, const char* eps_key,
                            float eps_default, const char* dropout_key, Architecture& a) {
  const auto eps = config.find(eps_key);
  a.norm_eps = eps != config.end() && eps->is_number() ? eps->get<float>() : eps_default;
  const auto dropout = config.find(dropout_key);
  a.dropout = dropout != config.end() && dropout->is_number() ? dropout->get<float>() : 0.1f;
  if (!(a.norm_eps > 0) || !(a.dropout >= 0 && a.dropout < 1))
    return spec_error(fmt::format("'{}': {} must be > 0 and {} in [0, 1)", file.string(),
                                  eps_key, dropout_key));
  return Status::ok();
}

// BERT and RoBERTa (`type`): the same encoder, RoBERTa's positions offset (the checkpoint
// reader drops the table's first padding_idx + 1 rows, so max_length is what remains).
Result<Architecture> bert_architecture(const json& config, const fs::path& file,
                                       const std::string& type) {
  Architecture a;
  a.kind = ArchitectureKind::kEncoder;
  a.norm = NormPlacement::kPost;
  a.tie_embeddings = true;
  a.pooler = true;
  a.hf_model_type = type;
  if (Status s = read_counts(config, file, "BERT",
                             {{"num_hidden_layers", &a.layers, 1024, 0},
                              {"hidden_size", &a.width, 1 << 16, 0},
                              {"num_attention_heads", &a.heads, 1 << 12, 0},
                              {"intermediate_size", &a.ffn_width, 1 << 20, 0},
                              {"vocab_size", &a.vocab_size, 1 << 22, 0},
                              {"max_position_embeddings", &a.max_length, 1 << 20, 512},
                              {"type_vocab_size", &a.type_vocab_size, 1 << 10, 2}});
      !s.is_ok())
    return s;
  if (a.width % a.heads != 0)
    return spec_error(fmt::format("'{}': num_attention_heads {} does not divide hidden_size {}",
                                  file.string(), a.heads, a.width));
  if (type == "roberta") {
    auto pad = roberta_padding_idx(config, file);
    if (!pad.is_ok()) return pad.status();
    if (a.max_length <= *pad + 1)
      return spec_error(fmt::format("'{}': max_position_embeddings {} leaves no position after "
                                    "RoBERTa's padding_idx + 1 = {}",
                                    file.string(), a.max_length, *pad + 1));
    a.max_length -= *pad + 1;
  }
  const std::string act = config.value("hidden_act", std::string("gelu"));
  if (act == "gelu") {
    a.activation = Activation::kGeluErf;
  } else if (act == "gelu_new" || act == "gelu_pytorch_tanh") {
    a.activation = Activation::kGeluTanh;
  } else {
    return spec_error(fmt::format("'{}': hidden_act '{}' is not supported; scion runs gelu "
                                  "(erf), gelu_new and gelu_pytorch_tanh",
                                  file.string(), act));
  }
  const std::string positions = config.value("position_embedding_type", std::string("absolute"));
  if (positions != "absolute")
    return spec_error(fmt::format("'{}': position_embedding_type '{}' is not supported; scion "
                                  "runs absolute (learned) positions",
                                  file.string(), positions));
  if (config.value("is_decoder", false) || config.value("add_cross_attention", false))
    return spec_error(fmt::format("'{}': a BERT decoder (is_decoder, add_cross_attention) is "
                                  "not supported; import an encoder",
                                  file.string()));
  if (Status s = read_eps_and_dropout(config, file, "layer_norm_eps", 1e-12f,
                                      "hidden_dropout_prob", a);
      !s.is_ok())
    return s;
  return a;
}

// GPT-2 (GPT2Model / GPT2LMHeadModel): pre-norm decoder, learned positions, tied head.
Result<Architecture> gpt2_architecture(const json& config, const fs::path& file) {
  Architecture a;
  a.kind = ArchitectureKind::kDecoder;
  a.norm = NormPlacement::kPre;
  a.tie_embeddings = true;
  a.hf_model_type = "gpt2";
  if (Status s = read_counts(config, file, "GPT-2",
                             {{"n_layer", &a.layers, 1024, 0},
                              {"n_embd", &a.width, 1 << 16, 0},
                              {"n_head", &a.heads, 1 << 12, 0},
                              {"vocab_size", &a.vocab_size, 1 << 22, 0},
                              {"n_positions", &a.max_length, 1 << 20, 1024}});
      !s.is_ok())
    return s;
  a.ffn_width = 4 * a.width;
  if (const json& inner = config.value("n_inner", json()); !inner.is_null())
    if (Status s = read_count(config, file, "n_inner", 1 << 20, 0, a.ffn_width, "GPT-2"); !s.is_ok())
      return s;
  if (a.width % a.heads != 0)
    return spec_error(fmt::format("'{}': n_head {} does not divide n_embd {}", file.string(),
                                  a.heads, a.width));
  const std::string act = config.value("activation_function", std::string("gelu_new"));
  if (act == "gelu_new" || act == "gelu_pytorch_tanh") {
    a.activation = Activation::kGeluTanh;
  } else if (act == "gelu") {
    a.activation = Activation::kGeluErf;
  } else {
    return spec_error(fmt::format("'{}': activation_function '{}' is not supported; scion runs "
                                  "gelu_new, gelu_pytorch_tanh and gelu",
                                  file.string(), act));
  }
  for (const char* key : {"scale_attn_by_inverse_layer_idx", "reorder_and_upcast_attn",
                          "add_cross_attention"})
    if (config.value(key, false))
      return spec_error(fmt::format("'{}': {} is true; scion runs GPT-2's attention without it",
                                    file.string(), key));
  if (!config.value("scale_attn_weights", true))
    return spec_error(fmt::format("'{}': scale_attn_weights is false; scion scales attention "
                                  "by 1/sqrt(head width) as GPT-2 does",
                                  file.string()));
  if (Status s = read_eps_and_dropout(config, file, "layer_norm_epsilon", 1e-5f, "resid_pdrop", a);
      !s.is_ok())
    return s;
  return a;
}

// A positive number config[key], or `fallback` when absent or null.
Status read_positive(const json& config, const fs::path& file, const char* key, float fallback,
                     float& out) {
  auto it = config.find(key);
  if (it == config.end() || it->is_null()) {
    out = fallback;
    return Status::ok();
  }
  if (!it->is_number() || !(it->get<double>() > 0))
    return spec_error(fmt::format("'{}': '{}' is {}, expected a number greater than 0",
                                  file.string(), key, it->dump()));
  out = it->get<float>();
  return Status::ok();
}

// rope_scaling: null (none), linear (positions divided by the factor) or dynamic (NTK
// scaling, which transformers applies only past max_position_embeddings, where scion
// refuses sequences, so it equals none here). The rest change the frequencies themselves
// and are refused by name.
Status read_rope_scaling(const json& config, const fs::path& file, Architecture& a) {
  a.rope_scale = 1.0f;
  const auto it = config.find("rope_scaling");
  if (it == config.end() || it->is_null()) return Status::ok();
  if (!it->is_object())
    return spec_error(fmt::format("'{}': rope_scaling is {}, expected null or an object with "
                                  "\"type\" and \"factor\"",
                                  file.string(), it->dump()));
  std::string type = it->value("rope_type", std::string());
  if (type.empty()) type = it->value("type", std::string());
  if (type == "default") return Status::ok();
  if (type != "linear" && type != "dynamic")
    return spec_error(fmt::format("'{}': rope_scaling type '{}' is not supported; scion runs "
                                  "none, linear and dynamic (llama3, yarn, longrope and su "
                                  "change the rotary frequencies and are refused)",
                                  file.string(), type));
  float factor = 1.0f;
  if (Status s = read_positive(*it, file, "factor", 0.0f, factor); !s.is_ok()) return s;
  if (!(factor >= 1.0f))
    return spec_error(fmt::format("'{}': rope_scaling.factor must be a number >= 1",
                                  file.string()));
  if (type == "linear") a.rope_scale = factor;
  return Status::ok();
}

// LlamaForCausalLM (SmolLM, TinyLlama, Llama 2 and 3 shapes): pre-norm decoder with
// RMSNorm, rotary positions, the SwiGLU FFN, grouped-query attention and no biases.
Result<Architecture> llama_architecture(const json& config, const fs::path& file) {
  Architecture a;
  a.kind = ArchitectureKind::kDecoder;
  a.norm = NormPlacement::kPre;
  a.norm_kind = NormKind::kRmsNorm;
  a.positions = PositionKind::kRotary;
  a.activation = Activation::kSwiGlu;
  a.linear_bias = false;
  a.pooler = false;
  a.type_vocab_size = 0;
  a.dropout = 0.0f;  // Llama has no hidden dropout; attention_dropout is on probabilities
  a.hf_model_type = "llama";
  if (Status s = read_counts(config, file, "Llama",
                             {{"num_hidden_layers", &a.layers, 1024, 0},
                              {"hidden_size", &a.width, 1 << 16, 0},
                              {"num_attention_heads", &a.heads, 1 << 12, 0},
                              {"intermediate_size", &a.ffn_width, 1 << 20, 0},
                              {"vocab_size", &a.vocab_size, 1 << 22, 0},
                              {"max_position_embeddings", &a.max_length, 1 << 20, 2048}});
      !s.is_ok())
    return s;
  if (Status s = read_count(config, file, "num_key_value_heads", 1 << 12, a.heads, a.kv_heads,
                            "Llama");
      !s.is_ok())
    return s;
  if (a.width % a.heads != 0)
    return spec_error(fmt::format("'{}': num_attention_heads {} does not divide hidden_size {}",
                                  file.string(), a.heads, a.width));
  if (a.heads % a.kv_heads != 0)
    return spec_error(fmt::format("'{}': num_key_value_heads {} does not divide "
                                  "num_attention_heads {}",
                                  file.string(), a.kv_heads, a.heads));
  if (a.head_dim() % 2 != 0)
    return spec_error(fmt::format("'{}': the head dimension {} is odd; rotary positions "
                                  "rotate channel pairs",
                                  file.string(), a.head_dim()));
  if (const auto dim = config.find("head_dim");
      dim != config.end() && !dim->is_null() && *dim != a.head_dim())
    return spec_error(fmt::format("'{}': head_dim {} differs from hidden_size / "
                                  "num_attention_heads = {}; scion runs heads of that width",
                                  file.string(), dim->dump(), a.head_dim()));
  const std::string act = config.value("hidden_act", std::string("silu"));
  if (act != "silu" && act != "swish")
    return spec_error(fmt::format("'{}': hidden_act '{}' is not supported for llama; scion "
                                  "runs silu (SwiGLU)",
                                  file.string(), act));
  for (const char* key : {"attention_bias", "mlp_bias"})
    if (config.value(key, false))
      return spec_error(fmt::format("'{}': {} is true; scion runs Llama's linear layers "
                                    "without biases",
                                    file.string(), key));
  if (Status s = read_positive(config, file, "rms_norm_eps", 1e-6f, a.norm_eps); !s.is_ok())
    return s;
  if (Status s = read_positive(config, file, "rope_theta", 10000.0f, a.rope_theta); !s.is_ok())
    return s;
  if (Status s = read_rope_scaling(config, file, a); !s.is_ok()) return s;
  a.tie_embeddings = config.value("tie_word_embeddings", false);
  return a;
}

}  // namespace

Result<int> hf_position_offset(const fs::path& folder, std::string_view model_type) {
  if (model_type != "roberta") return 0;
  const fs::path file = folder / "config.json";
  auto config = read_json(file);
  if (!config) return config.status();
  auto pad = roberta_padding_idx(*config, file);
  if (!pad.is_ok()) return pad.status();
  return *pad + 1;
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
  auto parsed = read_json(index);
  if (!parsed) return parsed.status();
  const auto map = parsed->find("weight_map");
  if (map == parsed->end() || !map->is_object())
    return spec_error(fmt::format("'{}' has no \"weight_map\" object", index.string()));
  std::set<std::string> shards;
  for (const auto& [tensor, file] : map->items()) {
    if (!file.is_string())
      return spec_error(fmt::format("'{}': weight_map['{}'] is not a file name", index.string(),
                                    tensor));
    const std::string name = file.get<std::string>();
    if (name.empty() || name.find('/') != std::string::npos || name == "..")
      return spec_error(fmt::format("'{}': shard '{}' is not a file name in the folder",
                                    index.string(), name));
    shards.insert(name);
  }
  std::vector<fs::path> files;
  for (const std::string& shard : shards) {
    if (!fs::is_regular_file(folder / shard))
      return spec_error(fmt::format("'{}' names shard '{}', which is not in the folder",
                                    index.string(), shard));
    files.push_back(folder / shard);
  }
  return files;
}

Result<HfModelFolder> read_hf_model_folder(const fs::path& folder, const std::string& spelled) {
  HfModelFolder out;
  const fs::path config_file = folder / "config.json";
  if (!fs::is_regular_file(config_file))
    return spec_error(fmt::format("'{}' is a folder without config.json; a Hugging Face model "
                                  "folder needs config.json, model.safetensors and "
                                  "tokenizer.json (or vocab.txt)",
                                  folder.string()));
  auto config = read_json(config_file);
  if (!config) return config.status();
  const std::string type = config->value("model_type", std::string());
  if (type != "bert" && type != "roberta" && type != "gpt2" && type != "llama")
    return spec_error(fmt::format("'{}': model_type '{}' is not supported yet; scion imports "
                                  "model_type bert (BERT, MiniLM), roberta, gpt2 and llama "
                                  "(SmolLM, TinyLlama, Llama 2 and 3 shapes)",
                                  config_file.string(), type));
  auto arch = type == "gpt2"    ? gpt2_architecture(*config, config_file)
              : type == "llama" ? llama_architecture(*config, config_file)
                                : bert_architecture(*config, config_file, type);
  if (!arch) return arch.status();
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
