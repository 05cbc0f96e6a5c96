// BpeTokenizer from a Hugging Face tokenizer.json (bpe_tokenizer.h says what it runs), and
// its special tokens from the tokenizer_config.json beside it.
#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>

#include "runtime/text/bpe_tokenizer.h"
#include "runtime/text/tokenizer_json.h"

namespace scion::text {

namespace {

using nlohmann::json;
using Pre = BpeTokenizer::PreTokenizer;
using Norm = BpeTokenizer::Normalizer;
using Dec = BpeTokenizer::Decoder;

Status unsupported(const std::string& file, const std::string& key, const std::string& found,
                   const std::string& expected) {
  return spec_error(fmt::format("{}: {} is {}; scion's BPE runs {}", file, key, found, expected));
}

// A Replace's literal pattern ({"String": "..."}), or nullopt for a regex.
std::optional<std::string> literal_pattern(const json& node) {
  const json& pattern = node.value("pattern", json());
  if (!pattern.is_object() || !pattern.contains("String") || !pattern["String"].is_string())
    return std::nullopt;
  return pattern["String"].get<std::string>();
}

Status read_normalizer(const json& node, const std::string& file, const std::string& key,
                       std::vector<Norm>& out) {
  const std::string type = component_type(node);
  if (type == "null") return Status::ok();
  if (type == "Sequence") {
    const json& list = node.value("normalizers", json::array());
    for (std::size_t i = 0; i < list.size(); ++i)
      SCION_RETURN_IF_ERROR(
          read_normalizer(list[i], file, fmt::format("{}.normalizers[{}]", key, i), out));
    return Status::ok();
  }
  Norm n;
  if (type == "Prepend") {
    n.kind = Norm::Kind::kPrepend;
    n.content = node.value("prepend", std::string());
  } else if (type == "Replace") {
    auto pattern = literal_pattern(node);
    if (!pattern || pattern->empty())
      return unsupported(file, key + ".pattern", node.value("pattern", json()).dump(),
                         "a literal {\"String\": ...} pattern");
    n.kind = Norm::Kind::kReplace;
    n.pattern = *pattern;
    n.content = node.value("content", std::string());
  } else {
    return unsupported(file, key + ".type", type,
                       "no normalizer, or Prepend and Replace (SentencePiece-style files)");
  }
  out.push_back(n);
  return Status::ok();
}

Status read_decoder(const json& node, const std::string& file, const std::string& key,
                    std::vector<Dec>& out) {
  const std::string type = component_type(node);
  if (type == "null") return Status::ok();
  if (type == "Sequence") {
    const json& list = node.value("decoders", json::array());
    for (std::size_t i = 0; i < list.size(); ++i)
      SCION_RETURN_IF_ERROR(
          read_decoder(list[i], file, fmt::format("{}.decoders[{}]", key, i), out));
    return Status::ok();
  }
  Dec d;
  if (type == "ByteLevel") {
    d.kind = Dec::Kind::kByteLevel;
  } else if (type == "ByteFallback") {
    d.kind = Dec::Kind::kByteFallback;
  } else if (type == "Fuse") {
    d.kind = Dec::Kind::kFuse;
  } else if (type == "Metaspace") {
    d.kind = Dec::Kind::kMetaspace;
    d.pattern = node.value("replacement", std::string("\xE2\x96\x81"));
    if (d.pattern.empty())
      return unsupported(file, key + ".replacement", "empty", "one replacement character");
    const std::string scheme = node.value(
        "prepend_scheme", std::string(node.value("add_prefix_space", true) ? "always" : "never"));
    d.drop_first = scheme != "never";
  } else if (type == "Replace") {
    auto pattern = literal_pattern(node);
    if (!pattern || pattern->empty())
      return unsupported(file, key + ".pattern", node.value("pattern", json()).dump(),
                         "a literal {\"String\": ...} pattern");
    d.kind = Dec::Kind::kReplace;
    d.pattern = *pattern;
    d.content = node.value("content", std::string());
  } else if (type == "Strip") {
    d.kind = Dec::Kind::kStrip;
    d.content = node.value("content", std::string(" "));
    d.start = node.value("start", 0);
    d.stop = node.value("stop", 0);
  } else {
    return unsupported(file, key + ".type", type,
                       "ByteLevel, or Metaspace, Replace, ByteFallback, Fuse and Strip");
  }
  out.push_back(d);
  return Status::ok();
}

// One pre-tokeniser of the file, or a Sequence of them, appended to `out`.
Status read_pre_tokenizer(const json& node, const std::string& file, const std::string& key,
                          std::vector<Pre>& out) {
  const std::string type = component_type(node);
  if (type == "null") return Status::ok();
  if (type == "Sequence") {
    const json& list = node.value("pretokenizers", json::array());
    for (std::size_t i = 0; i < list.size(); ++i)
      SCION_RETURN_IF_ERROR(
          read_pre_tokenizer(list[i], file, fmt::format("{}.pretokenizers[{}]", key, i), out));
    return Status::ok();
  }
  Pre pre;
  if (type == "ByteLevel") {
    pre.kind = Pre::Kind::kByteLevel;
    pre.add_prefix_space = node.value("add_prefix_space", false);
    pre.use_regex = node.value("use_regex", true);
  } else if (type == "Metaspace") {
    pre.kind = Pre::Kind::kMetaspace;
    pre.replacement = node.value("replacement", pre.replacement);
    if (pre.replacement.empty())
      return unsupported(file, key + ".replacement", "empty", "one replacement character");
    // Files before tokenizers 0.15 spell the scheme as add_prefix_space.
    const std::string scheme = node.value(
        "prepend_scheme", std::string(node.value("add_prefix_space", true) ? "always" : "never"));
    if (scheme == "always") {
      pre.prepend = Pre::Prepend::kAlways;
    } else if (scheme == "first") {
      pre.prepend = Pre::Prepend::kFirst;
    } else if (scheme == "never") {
      pre.prepend = Pre::Prepend::kNever;
    } else {
      return unsupported(file, key + ".prepend_scheme", scheme, "always, first or never");
    }
    pre.split = node.value("split", true);
  } else if (type == "Digits") {
    pre.kind = Pre::Kind::kDigits;
    pre.individual_digits = node.value("individual_digits", false);
  } else if (type == "Split") {
    pre.kind = Pre::Kind::kSplit;
    const json& pattern = node.value("pattern", json());
    const std::string regex = pattern.is_object() ? pattern.value("Regex", std::string()) : "";
    auto known = split_pattern_named(regex);
    if (!known)
      return unsupported(file, key + ".pattern", pattern.dump(),
                         "GPT-2's or Llama 3's split regex");
    if (node.value("behavior", std::string()) != "Isolated" || node.value("invert", false))
      return unsupported(file, key + ".behavior", node.value("behavior", std::string("?")),
                         "Isolated, not inverted");
    pre.pattern = *known;
  } else {
    return unsupported(file, key + ".type", type,
                       "ByteLevel, Split, Digits, Metaspace or a Sequence");
  }
  out.push_back(pre);
  return Status::ok();
}

// The ids a post-processor puts before and after one text.
Status read_post_processor(const json& node, const std::string& file, const std::string& key,
                           std::vector<std::int32_t>& opening, std::vector<std::int32_t>& closing) {
  const std::string type = component_type(node);
  if (type == "null" || type == "ByteLevel") return Status::ok();
  if (type == "Sequence") {
    const json& list = node.value("processors", json::array());
    for (std::size_t i = 0; i < list.size(); ++i)
      SCION_RETURN_IF_ERROR(read_post_processor(
          list[i], file, fmt::format("{}.processors[{}]", key, i), opening, closing));
    return Status::ok();
  }
  if (type == "RobertaProcessing" || type == "BertProcessing") {
    const json& cls = node.value("cls", json());
    const json& sep = node.value("sep", json());
    if (!cls.is_array() || cls.size() != 2 || !sep.is_array() || sep.size() != 2 ||
        !cls[1].is_number_integer() || !sep[1].is_number_integer())
      return spec_error(fmt::format("{}: {} needs \"cls\" and \"sep\" as [token, id]", file, key));
    opening.push_back(cls[1].get<std::int32_t>());
    closing.push_back(sep[1].get<std::int32_t>());
    return Status::ok();
  }
  if (type != "TemplateProcessing")
    return unsupported(file, key + ".type", type,
                       "RobertaProcessing, TemplateProcessing, ByteLevel or a Sequence");
  const json& specials = node.value("special_tokens", json::object());
  bool after = false;
  for (const json& item : node.value("single", json::array())) {
    if (item.contains("Sequence")) {
      after = true;
      continue;
    }
    const std::string name = item.contains("SpecialToken")
                                 ? item["SpecialToken"].value("id", std::string())
                                 : std::string();
    const json& entry = specials.value(name, json());
    if (name.empty() || !entry.is_object() || !entry.value("ids", json()).is_array())
      return spec_error(
          fmt::format("{}: {}.single names '{}', which is not in its "
                      "special_tokens",
                      file, key, name));
    for (const json& id : entry["ids"])
      (after ? closing : opening).push_back(id.get<std::int32_t>());
  }
  return Status::ok();
}

// The ids of a template's special token, by its name in special_tokens.
Result<std::vector<std::int32_t>> template_ids(const json& specials, const json& item,
                                               const std::string& file, const std::string& key) {
  const std::string name = item.contains("SpecialToken")
                               ? item["SpecialToken"].value("id", std::string())
                               : std::string();
  const json& entry = specials.value(name, json());
  if (name.empty() || !entry.is_object() || !entry.value("ids", json()).is_array())
    return spec_error(
        fmt::format("{}: {} names '{}', which is not in its special_tokens", file, key, name));
  std::vector<std::int32_t> ids;
  for (const json& id : entry["ids"]) ids.push_back(id.get<std::int32_t>());
  return ids;
}

// How the post-processor frames a sentence pair (PairFraming), found in a Sequence of
// processors too; false when it says nothing about pairs.
Result<bool> read_pair_framing(const json& node, const std::string& file, PairFraming& pair) {
  const std::string type = component_type(node);
  if (type == "Sequence") {
    for (const json& item : node.value("processors", json::array())) {
      auto found = read_pair_framing(item, file, pair);
      if (!found || *found) return found;
    }
    return false;
  }
  if (type == "RobertaProcessing" || type == "BertProcessing") {
    const std::int32_t cls = node["cls"][1].get<std::int32_t>();
    const std::int32_t sep = node["sep"][1].get<std::int32_t>();
    const bool roberta = type == "RobertaProcessing";
    pair = {.open = {cls},
            .middle = roberta ? std::vector{sep, sep} : std::vector{sep},
            .close = {sep},
            .second_type = roberta ? 0 : 1};
    return true;
  }
  if (type != "TemplateProcessing" || !node.value("pair", json()).is_array()) return false;
  const json& specials = node.value("special_tokens", json::object());
  PairFraming read{.second_type = 0};
  int sequences = 0;
  for (const json& item : node["pair"]) {
    if (item.contains("Sequence")) {
      if (++sequences == 2) read.second_type = item["Sequence"].value("type_id", 0);
      continue;
    }
    auto ids = template_ids(specials, item, file, "post_processor.pair");
    if (!ids) return ids.status();
    std::vector<std::int32_t>& part = sequences == 0   ? read.open
                                      : sequences == 1 ? read.middle
                                                       : read.close;
    part.insert(part.end(), ids->begin(), ids->end());
  }
  if (sequences != 2)
    return spec_error(
        fmt::format("{}: post_processor.pair holds {} sequences; a pair has two", file, sequences));
  pair = read;
  return true;
}

// The token a tokenizer_config.json entry names: "text" or {"content": "text", ...}.
std::string config_token(const json& config, const char* key) {
  const json& v = config.value(key, json());
  if (v.is_string()) return v.get<std::string>();
  if (v.is_object()) return v.value("content", std::string());
  return "";
}

json read_config(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) return json::object();
  json parsed = json::parse(in, nullptr, false);
  return parsed.is_object() ? parsed : json::object();
}

}  // namespace

Result<std::unique_ptr<BpeTokenizer>> BpeTokenizer::load_hugging_face(
    const std::filesystem::path& tokenizer_json) {
  const std::string file = tokenizer_json.string();
  auto parsed = read_tokenizer_json(tokenizer_json);
  if (!parsed.is_ok()) return parsed.status();
  const json& root = *parsed;
  const json& model = root.value("model", json());
  if (component_type(model) != "BPE") return unsupported(file, "model.type", component_type(model), "BPE");
  const json& dropout = model.value("dropout", json());
  if (!(dropout.is_null() || (dropout.is_number() && dropout.get<double>() == 0.0)))
    return unsupported(file, "model.dropout", dropout.dump(), "no dropout (null)");
  for (const char* key : {"continuing_subword_prefix", "end_of_word_suffix"}) {
    const json& v = model.value(key, json());
    if (!v.is_null() && !(v.is_string() && v.get<std::string>().empty()))
      return unsupported(file, std::string("model.") + key, v.dump(), "none (null)");
  }

  std::unique_ptr<BpeTokenizer> tok(new BpeTokenizer());
  SCION_RETURN_IF_ERROR(
      read_normalizer(root.value("normalizer", json()), file, "normalizer", tok->normalizers_));
  SCION_RETURN_IF_ERROR(read_pre_tokenizer(root.value("pre_tokenizer", json()), file,
                                           "pre_tokenizer", tok->pre_tokenizers_));
  const auto byte_levels =
      std::count_if(tok->pre_tokenizers_.begin(), tok->pre_tokenizers_.end(),
                    [](const Pre& p) { return p.kind == Pre::Kind::kByteLevel; });
  tok->byte_level_ = byte_levels > 0;
  // ByteLevel maps bytes to characters: a step after it would see those characters.
  if (byte_levels > 1 ||
      (tok->byte_level_ && tok->pre_tokenizers_.back().kind != Pre::Kind::kByteLevel))
    return unsupported(file, "pre_tokenizer", component_type(root["pre_tokenizer"]),
                       "at most one ByteLevel pre-tokenizer, last");
  SCION_RETURN_IF_ERROR(
      read_decoder(root.value("decoder", json()), file, "decoder", tok->decoders_));
  tok->byte_fallback_ = model.value("byte_fallback", false);
  SCION_RETURN_IF_ERROR(read_post_processor(root.value("post_processor", json()), file,
                                            "post_processor", tok->opening_, tok->closing_));

  const json& vocab = model.value("vocab", json());
  if (!vocab.is_object() || vocab.empty())
    return spec_error(fmt::format("{}: model.vocab is not a non-empty object of token ids", file));
  std::vector<std::pair<std::string, std::int32_t>> entries;
  for (const auto& [token, id] : vocab.items()) {
    if (!id.is_number_unsigned() || id.get<std::uint64_t>() >= (1u << 24))
      return spec_error(
          fmt::format("{}: model.vocab['{}'] = {} is not an id", file, token, id.dump()));
    entries.emplace_back(token, id.get<std::int32_t>());
  }
  for (const json& added : root.value("added_tokens", json::array())) {
    AddedToken a;
    a.content = added.value("content", std::string());
    if (a.content.empty() || !added.contains("id") || !added["id"].is_number_unsigned() ||
        added["id"].get<std::uint64_t>() >= (1u << 24))
      return spec_error(fmt::format("{}: added_tokens has an entry without content or id: {}", file,
                                    added.dump()));
    a.id = added["id"].get<std::int32_t>();
    a.lstrip = added.value("lstrip", false);
    a.rstrip = added.value("rstrip", false);
    a.single_word = added.value("single_word", false);
    a.special = added.value("special", false);
    tok->added_.push_back(a);
    entries.emplace_back(a.content, a.id);
  }
  std::int32_t size = 0;
  for (const auto& [token, id] : entries) size = std::max(size, id + 1);
  tok->tokens_.assign(static_cast<std::size_t>(size), std::string());
  tok->special_ids_.assign(static_cast<std::size_t>(size), false);
  for (const auto& [token, id] : entries) {
    std::string& slot = tok->tokens_[static_cast<std::size_t>(id)];
    if (!slot.empty() && slot != token)
      return spec_error(fmt::format("{}: id {} is both '{}' and '{}'", file, id, slot, token));
    slot = token;
  }
  for (std::int32_t id = 0; id < size; ++id)
    if (tok->tokens_[static_cast<std::size_t>(id)].empty())
      return spec_error(
          fmt::format("{}: id {} has no token; ids must run from 0 without gaps", file, id));
  for (const auto& [token, id] : vocab.items()) tok->ids_.emplace(token, id.get<std::int32_t>());
  for (const AddedToken& a : tok->added_) {
    tok->special_ids_[static_cast<std::size_t>(a.id)] = a.special;
    tok->added_starts_[static_cast<unsigned char>(a.content[0])] = true;
  }
  std::stable_sort(tok->added_.begin(), tok->added_.end(), [](const auto& a, const auto& b) {
    return a.content.size() > b.content.size();
  });

  const json& merges = model.value("merges", json::array());
  for (std::size_t rank = 0; rank < merges.size(); ++rank) {
    const json& m = merges[rank];
    std::string left, right;
    if (m.is_string()) {
      const std::string line = m.get<std::string>();
      const std::size_t space = line.find(' ');
      if (space != std::string::npos && line.find(' ', space + 1) == std::string::npos) {
        left = line.substr(0, space);
        right = line.substr(space + 1);
      }
    } else if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string()) {
      left = m[0].get<std::string>();
      right = m[1].get<std::string>();
    }
    auto a = tok->ids_.find(left), b = tok->ids_.find(right), ab = tok->ids_.find(left + right);
    if (left.empty() || right.empty() || a == tok->ids_.end() || b == tok->ids_.end() ||
        ab == tok->ids_.end())
      return spec_error(
          fmt::format("{}: model.merges[{}] = {} is not two vocabulary tokens "
                      "whose join is one",
                      file, rank, m.dump()));
    const std::uint64_t key =
        (static_cast<std::uint64_t>(static_cast<std::uint32_t>(a->second)) << 32) |
        static_cast<std::uint32_t>(b->second);
    tok->merges_.emplace(key, std::pair<int, std::int32_t>{static_cast<int>(rank), ab->second});
  }
  const json& unk = model.value("unk_token", json());
  if (unk.is_string()) {
    auto it = tok->ids_.find(unk.get<std::string>());
    if (it == tok->ids_.end())
      return spec_error(fmt::format("{}: model.unk_token '{}' is not in model.vocab", file,
                                    unk.get<std::string>()));
    tok->unk_ = it->second;
  }
  tok->fuse_unk_ = model.value("fuse_unk", false);
  tok->ignore_merges_ = model.value("ignore_merges", false);

  // scion's framing: the post-processor's tokens, else tokenizer_config.json's.
  const json config = read_config(tokenizer_json.parent_path() / "tokenizer_config.json");
  auto id_of = [&](const std::string& token) -> std::int32_t {
    if (token.empty()) return kNoToken;
    for (const AddedToken& a : tok->added_)
      if (a.content == token) return a.id;
    auto it = tok->ids_.find(token);
    return it == tok->ids_.end() ? kNoToken : it->second;
  };
  auto first_of = [&](const char* a, const char* b) {
    const std::int32_t id = id_of(config_token(config, a));
    return id != kNoToken ? id : id_of(config_token(config, b));
  };
  SpecialTokens& s = tok->specials_;
  s.cls = tok->opening_.size() == 1 ? tok->opening_[0] : first_of("cls_token", "bos_token");
  s.sep = tok->closing_.size() == 1 ? tok->closing_[0] : first_of("sep_token", "eos_token");
  if (s.cls == kNoToken || s.sep == kNoToken)
    return spec_error(fmt::format(
        "{}: no {} token to frame a sequence with: its post_processor adds none and no "
        "tokenizer_config.json beside it names a known {}; put the model's "
        "tokenizer_config.json (save_pretrained writes it) beside tokenizer.json",
        file, s.cls == kNoToken ? "start" : "end", s.cls == kNoToken ? "bos_token" : "eos_token"));
  s.pad = id_of(config_token(config, "pad_token"));
  if (s.pad == kNoToken) s.pad = s.sep;
  s.mask = id_of(config_token(config, "mask_token"));
  s.unk = tok->unk_;
  tok->pair_ = {.open = {s.cls}, .middle = {s.sep}, .close = {s.sep}, .second_type = 0};
  auto pair = read_pair_framing(root.value("post_processor", json()), file, tok->pair_);
  if (!pair) return pair.status();
  return tok;
}

}  // namespace scion::text
