#include "spec/spec_json.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "spec/keys.h"
#include "spec/vocabulary.h"

namespace scion::spec {

using nlohmann::json;

json architecture_json(const Architecture& a) {
  json out = {
      {"type", word(a.kind)},
      {"layers", a.layers},
      {"width", a.width},
      {"heads", a.heads},
      {"ffn_width", a.ffn_width},
      {"vocab_size", a.vocab_size},
      {"max_length", a.max_length},
      {"norm", word(a.norm)},
      {"dropout", a.dropout},
      {"tie_embeddings", a.tie_embeddings},
      {"tokenizer",
       {{"kind", static_cast<int>(a.tokenizer.kind)}, {"vocab_file", a.tokenizer.vocab_file}}}};
  // Only where they differ from native models, so existing recipe hashes stay the same.
  if (!a.hf_model_type.empty()) {
    out["hf_model_type"] = a.hf_model_type;
    out["norm_eps"] = a.norm_eps;
    out["activation"] = a.activation == Activation::kGeluErf  ? "gelu"
                        : a.activation == Activation::kSwiGlu ? "swiglu"
                                                              : "gelu_tanh";
    out["type_vocab_size"] = a.type_vocab_size;
    out["pooler"] = a.pooler;
  }
  // The Llama-shaped decoders' differences (llama, qwen2, mistral), again only where present.
  if (a.positions == PositionKind::kRotary) {
    out["norm_kind"] = a.norm_kind == NormKind::kRmsNorm ? "rms" : "layer";
    out["positions"] = a.positions == PositionKind::kRotary ? "rope" : "learned";
    out["kv_heads"] = a.kv_heads;
    out["rope_theta"] = a.rope_theta;
    out["rope_scale"] = a.rope_scale;
    out["linear_bias"] = a.linear_bias;
    if (a.qkv_bias) out["qkv_bias"] = true;
    if (a.sliding_window > 0) out["sliding_window"] = a.sliding_window;
  }
  return out;
}

json adaptation_json(const Adaptation& ad) {
  json out = json::object();
  // The registered methods' settings under their keys (keys that did not exist before a
  // method did, so older recipes keep their hashes).
  for (const auto& [key, settings] : ad.methods) out[key] = settings->json();
  if (ad.prefix)
    out["prefix"] = {{"virtual_tokens", ad.prefix->virtual_tokens},
                     {"layers", ad.prefix->layers},
                     {"reparam_hidden", ad.prefix->reparam_hidden}};
  if (ad.prompt)
    out["prompt"] = {{"virtual_tokens", ad.prompt->virtual_tokens},
                     {"init", static_cast<int>(ad.prompt->init)},
                     {"text", ad.prompt->init_text}};
  if (ad.head) {
    out["head"] = {{"task", word(ad.head->task)},
                   {"labels", ad.head->labels},
                   {"pooling", static_cast<int>(ad.head->pooling)}};
    if (ad.head->threshold) out["head"]["threshold"] = *ad.head->threshold;
  }
  if (ad.bitfit) out["bitfit"] = true;
  if (ad.full) out["full"] = true;
  return out;
}

std::optional<Adaptation> adaptation_from_recipe(const json& adapt) {
  if (!adapt.is_object()) return std::nullopt;
  Adaptation ad;
  try {
    for (const MethodBlock* block : method_blocks()) {
      const std::string key(block->key());
      if (!adapt.contains(key)) continue;
      std::shared_ptr<const MethodSettings> settings = block->from_json(adapt[key]);
      if (!settings) return std::nullopt;
      ad.methods[key] = std::move(settings);
    }
    if (adapt.contains("prefix")) {
      const json& p = adapt["prefix"];
      ad.prefix = PrefixSpec{.virtual_tokens = p.at("virtual_tokens").get<int>(),
                             .layers = p.at("layers").get<std::vector<int>>(),
                             .reparam_hidden = p.at("reparam_hidden").get<int>()};
    }
    if (adapt.contains("prompt")) {
      const json& p = adapt["prompt"];
      ad.prompt = PromptSpec{.virtual_tokens = p.at("virtual_tokens").get<int>(),
                             .init = static_cast<PromptInit>(p.at("init").get<int>()),
                             .init_text = p.at("text").get<std::string>()};
    }
    if (adapt.contains("head")) {
      const json& h = adapt["head"];
      const std::string task = h.at("task").get<std::string>();
      const auto known = std::find_if(std::begin(keys::kTasks), std::end(keys::kTasks),
                                      [&](const auto& c) { return c.word == task; });
      if (known == std::end(keys::kTasks)) return std::nullopt;
      ad.head = HeadSpec{.task = known->value,
                         .labels = h.at("labels").get<std::vector<std::string>>(),
                         .pooling = static_cast<Pooling>(h.at("pooling").get<int>())};
      if (h.contains("threshold")) ad.head->threshold = h.at("threshold").get<float>();
    }
    if (adapt.contains("bitfit")) ad.bitfit = BitfitSpec{};
    if (adapt.contains("full")) ad.full = FullSpec{};
  } catch (const json::exception&) {
    return std::nullopt;
  }
  return ad;
}

namespace {

// The canonical recipe's enums by their path in it, each as its words in index order
// (spec/vocabulary.h): the words scion.yaml uses, from keys.h's tables.
const std::map<std::string, std::vector<std::string_view>, std::less<>>& enum_words() {
  using vocabulary_detail::by_index;
  static const std::map<std::string, std::vector<std::string_view>, std::less<>> words = {
      {"train.objective", by_index(keys::kObjectives)},
      {"train.optimizer.type", by_index(keys::kOptimizers)},
      {"train.schedule.type", by_index(keys::kSchedules)},
      {"train.data.format", by_index(keys::kDatasetFormats)},
      {"train.validation.format", by_index(keys::kDatasetFormats)},
      {"adapt.prompt.init", by_index(keys::kPromptInits)},
      {"adapt.head.pooling", by_index(keys::kPoolings)},
      {"architecture.tokenizer.kind", by_index(keys::kTokenizers)},
  };
  return words;
}

// The words of the enum at `path` of a canonical recipe, by index: spec/'s own, or a
// registered method's (MethodBlock::enum_words, under "adapt.<key>."); none when `path`
// holds no enum.
std::vector<std::string_view> enum_words_at(std::string_view path) {
  if (const auto own = enum_words().find(path); own != enum_words().end()) return own->second;
  constexpr std::string_view kAdapt = "adapt.";
  if (!path.starts_with(kAdapt)) return {};
  const std::string_view rest = path.substr(kAdapt.size());
  const std::size_t dot = rest.find('.');
  if (dot == std::string_view::npos) return {};
  const MethodBlock* block = find_method_block(rest.substr(0, dot));
  if (block == nullptr) return {};
  const auto words = block->enum_words();
  const auto it = words.find(rest.substr(dot + 1));
  return it == words.end() ? std::vector<std::string_view>() : it->second;
}

// Spec values are floats; the recipe holds them as doubles. A double that is exactly a
// float prints as that float's shortest form.
json as_written(double value) {
  const auto single = static_cast<float>(value);
  if (!std::isfinite(value) || static_cast<double>(single) != value) return value;
  return std::strtod(fmt::format("{}", single).c_str(), nullptr);
}

json words_at(const json& value, const std::string& path) {
  if (value.is_object()) {
    json out = json::object();
    for (const auto& [key, child] : value.items())
      out[key] = words_at(child, path.empty() ? key : path + "." + key);
    return out;
  }
  if (value.is_array()) {
    json out = json::array();
    for (const json& item : value) out.push_back(words_at(item, path));
    return out;
  }
  if (const std::vector<std::string_view> words = enum_words_at(path);
      !words.empty() && value.is_number_integer()) {
    const auto index = value.get<std::int64_t>();
    if (index >= 0 && index < static_cast<std::int64_t>(words.size()))
      return std::string(words[index]);
  }
  if (path == "train.seed" && value.is_string()) {
    const std::string& text = value.get_ref<const std::string&>();
    std::uint64_t seed = 0;
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), seed);
    if (error == std::errc() && end == text.data() + text.size()) return seed;
  }
  if (value.is_number_float()) return as_written(value.get<double>());
  return value;
}

}  // namespace

json in_spec_words(const json& canonical, std::string_view path) {
  return words_at(canonical, std::string(path));
}

}  // namespace scion::spec
