// BpeTokenizer from a Hugging Face tokenizer.json (bpe_tokenizer.h says what it runs), and
// its special tokens from the tokenizer_config.json beside it.
#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <iterator>
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

// Ids above this are refused: a file is not allowed to size the tables by itself.
constexpr std::int64_t kMaxTokenId = (1 << 24) - 1;

// "<file>: <node's path>.<key> is <found>; scion's BPE runs <expected>".
Status unsupported(const JsonValue& node, std::string_view key, const std::string& found,
                   const std::string& expected) {
  return spec_error(fmt::format("{}: {} is {}; scion's BPE runs {}", node.file(),
                                node.key_path(key), found, expected));
}

// The component `node` of a Sequence's list `list_key`, or the component itself: each
// element is read by `read_one`.
template <typename ReadOne>
Status read_sequence(const JsonValue& node, const char* list_key, ReadOne read_one) {
  auto list = node.array_or_null(list_key);
  if (!list) return list.status();
  if (!*list) return Status::ok();
  for (const JsonValue& element : (*list)->elements()) SCION_RETURN_IF_ERROR(read_one(element));
  return Status::ok();
}

// A Replace's literal pattern ({"String": "..."}), or nullopt for a regex or anything else.
Result<std::optional<std::string>> literal_pattern(const JsonValue& node) {
  auto pattern = node.object_or_null("pattern");
  if (!pattern) return pattern.status();
  if (!*pattern || !(*pattern)->has("String")) return std::optional<std::string>();
  auto text = (*pattern)->string_or("String", "");
  if (!text) return text.status();
  return std::optional<std::string>(*text);
}

// A Replace step's pattern and content (normaliser or decoder).
Status read_replace(const JsonValue& node, std::string& pattern, std::string& content) {
  auto literal = literal_pattern(node);
  if (!literal) return literal.status();
  if (!*literal || (*literal)->empty()) {
    const std::optional<JsonValue> pattern = node.member("pattern");
    return unsupported(node, "pattern", pattern ? JsonValue::shown(pattern->raw()) : "missing",
                       "a literal {\"String\": ...} pattern");
  }
  pattern = **literal;
  auto replacement = node.string_or("content", "");
  if (!replacement) return replacement.status();
  content = *replacement;
  return Status::ok();
}

// Metaspace's prepend_scheme, which files before tokenizers 0.15 spell as add_prefix_space.
Result<std::string> prepend_scheme(const JsonValue& node) {
  auto prefix_space = node.bool_or("add_prefix_space", true);
  if (!prefix_space) return prefix_space.status();
  return node.string_or("prepend_scheme", *prefix_space ? "always" : "never");
}

Status read_normalizer(const JsonValue& node, std::vector<Norm>& out) {
  auto type = component_type(node);
  if (!type) return type.status();
  if (*type == "Sequence")
    return read_sequence(node, "normalizers",
                         [&](const JsonValue& n) { return read_normalizer(n, out); });
  Norm n;
  if (*type == "Prepend") {
    n.kind = Norm::Kind::kPrepend;
    auto prepend = node.string_or("prepend", "");
    if (!prepend) return prepend.status();
    n.content = *prepend;
  } else if (*type == "Replace") {
    n.kind = Norm::Kind::kReplace;
    SCION_RETURN_IF_ERROR(read_replace(node, n.pattern, n.content));
  } else {
    return unsupported(node, "type", *type,
                       "no normalizer, or Prepend and Replace (SentencePiece-style files)");
  }
  out.push_back(n);
  return Status::ok();
}

Status read_decoder(const JsonValue& node, std::vector<Dec>& out) {
  auto type = component_type(node);
  if (!type) return type.status();
  if (*type == "Sequence")
    return read_sequence(node, "decoders",
                         [&](const JsonValue& d) { return read_decoder(d, out); });
  Dec d;
  if (*type == "ByteLevel") {
    d.kind = Dec::Kind::kByteLevel;
  } else if (*type == "ByteFallback") {
    d.kind = Dec::Kind::kByteFallback;
  } else if (*type == "Fuse") {
    d.kind = Dec::Kind::kFuse;
  } else if (*type == "Metaspace") {
    d.kind = Dec::Kind::kMetaspace;
    auto replacement = node.string_or("replacement", "\xE2\x96\x81");
    if (!replacement) return replacement.status();
    if (replacement->empty())
      return unsupported(node, "replacement", "empty", "one replacement character");
    d.pattern = *replacement;
    auto scheme = prepend_scheme(node);
    if (!scheme) return scheme.status();
    d.drop_first = *scheme != "never";
  } else if (*type == "Replace") {
    d.kind = Dec::Kind::kReplace;
    SCION_RETURN_IF_ERROR(read_replace(node, d.pattern, d.content));
  } else if (*type == "Strip") {
    d.kind = Dec::Kind::kStrip;
    auto content = node.string_or("content", " ");
    if (!content) return content.status();
    d.content = *content;
    auto start = node.integer_or("start", 0, 0, 1 << 20);
    if (!start) return start.status();
    auto stop = node.integer_or("stop", 0, 0, 1 << 20);
    if (!stop) return stop.status();
    d.start = static_cast<int>(*start);
    d.stop = static_cast<int>(*stop);
  } else {
    return unsupported(node, "type", *type,
                       "ByteLevel, or Metaspace, Replace, ByteFallback, Fuse and Strip");
  }
  out.push_back(d);
  return Status::ok();
}

Status read_metaspace(const JsonValue& node, Pre& pre) {
  pre.kind = Pre::Kind::kMetaspace;
  auto replacement = node.string_or("replacement", pre.replacement);
  if (!replacement) return replacement.status();
  if (replacement->empty())
    return unsupported(node, "replacement", "empty", "one replacement character");
  pre.replacement = *replacement;
  auto scheme = prepend_scheme(node);
  if (!scheme) return scheme.status();
  if (*scheme == "always") {
    pre.prepend = Pre::Prepend::kAlways;
  } else if (*scheme == "first") {
    pre.prepend = Pre::Prepend::kFirst;
  } else if (*scheme == "never") {
    pre.prepend = Pre::Prepend::kNever;
  } else {
    return unsupported(node, "prepend_scheme", *scheme, "always, first or never");
  }
  auto split = node.bool_or("split", true);
  if (!split) return split.status();
  pre.split = *split;
  return Status::ok();
}

Status read_split(const JsonValue& node, Pre& pre) {
  pre.kind = Pre::Kind::kSplit;
  auto pattern = node.object_or_null("pattern");
  if (!pattern) return pattern.status();
  std::string regex;
  if (*pattern) {
    auto r = (*pattern)->string_or("Regex", "");
    if (!r) return r.status();
    regex = *r;
  }
  auto known = split_pattern_named(regex);
  if (!known)
    return unsupported(node, "pattern", *pattern ? JsonValue::shown((*pattern)->raw()) : "missing",
                       "GPT-2's or Llama 3's split regex");
  auto behavior = node.string_or("behavior", "?");
  if (!behavior) return behavior.status();
  auto invert = node.bool_or("invert", false);
  if (!invert) return invert.status();
  if (*behavior != "Isolated" || *invert)
    return unsupported(node, "behavior", *behavior, "Isolated, not inverted");
  pre.pattern = *known;
  return Status::ok();
}

// One pre-tokeniser of the file, or a Sequence of them, appended to `out`.
Status read_pre_tokenizer(const JsonValue& node, std::vector<Pre>& out) {
  auto type = component_type(node);
  if (!type) return type.status();
  if (*type == "Sequence")
    return read_sequence(node, "pretokenizers",
                         [&](const JsonValue& p) { return read_pre_tokenizer(p, out); });
  Pre pre;
  if (*type == "ByteLevel") {
    pre.kind = Pre::Kind::kByteLevel;
    auto prefix_space = node.bool_or("add_prefix_space", false);
    if (!prefix_space) return prefix_space.status();
    auto use_regex = node.bool_or("use_regex", true);
    if (!use_regex) return use_regex.status();
    pre.add_prefix_space = *prefix_space;
    pre.use_regex = *use_regex;
  } else if (*type == "Metaspace") {
    SCION_RETURN_IF_ERROR(read_metaspace(node, pre));
  } else if (*type == "Digits") {
    pre.kind = Pre::Kind::kDigits;
    auto individual = node.bool_or("individual_digits", false);
    if (!individual) return individual.status();
    pre.individual_digits = *individual;
  } else if (*type == "Split") {
    SCION_RETURN_IF_ERROR(read_split(node, pre));
  } else {
    return unsupported(node, "type", *type, "ByteLevel, Split, Digits, Metaspace or a Sequence");
  }
  out.push_back(pre);
  return Status::ok();
}

// A token id in the file (the vocabulary's size is checked once every id is known).
Result<std::int32_t> token_id(const JsonValue& value) {
  auto id = value.as_integer(0, kMaxTokenId);
  if (!id) return id.status();
  return static_cast<std::int32_t>(*id);
}

// RobertaProcessing's and BertProcessing's "cls" or "sep": [token, id].
Result<std::int32_t> framing_id(const JsonValue& node, const char* key) {
  auto pair = node.required(key);
  if (!pair) return pair.status();
  if (!pair->is_array() || pair->raw().size() != 2) return pair->wrong_type("[token, id]");
  return token_id(pair->elements()[1]);
}

// Appends the ids of the special token a template `item` of TemplateProcessing `node`
// names ({"SpecialToken": {"id": name}}), looked up in its special_tokens.
Status template_special_ids(const JsonValue& node, const std::optional<JsonValue>& specials,
                            const JsonValue& item, std::vector<std::int32_t>& out) {
  auto special = item.object_or_null("SpecialToken");
  if (!special) return special.status();
  std::string name;
  if (*special) {
    auto id = (*special)->string_or("id", "");
    if (!id) return id.status();
    name = *id;
  }
  const std::optional<JsonValue> entry = specials ? specials->member(name) : std::nullopt;
  if (name.empty() || !entry)
    return item.error(fmt::format("names special token '{}', which is not in {}.special_tokens",
                                  name, node.path()));
  SCION_RETURN_IF_ERROR(entry->expect_object());
  auto ids = entry->required("ids");
  if (!ids) return ids.status();
  SCION_RETURN_IF_ERROR(ids->expect_array());
  for (const JsonValue& id : ids->elements()) {
    auto value = token_id(id);
    if (!value) return value.status();
    out.push_back(*value);
  }
  return Status::ok();
}

// The ids a TemplateProcessing puts before and after one text.
Status read_template(const JsonValue& node, std::vector<std::int32_t>& opening,
                     std::vector<std::int32_t>& closing) {
  auto specials = node.object_or_null("special_tokens");
  if (!specials) return specials.status();
  auto single = node.array_or_null("single");
  if (!single) return single.status();
  if (!*single) return Status::ok();
  bool after = false;
  for (const JsonValue& item : (*single)->elements()) {
    SCION_RETURN_IF_ERROR(item.expect_object());
    if (item.has("Sequence")) {
      after = true;
      continue;
    }
    SCION_RETURN_IF_ERROR(template_special_ids(node, *specials, item, after ? closing : opening));
  }
  return Status::ok();
}

// The ids a post-processor puts before and after one text.
Status read_post_processor(const JsonValue& node, std::vector<std::int32_t>& opening,
                           std::vector<std::int32_t>& closing) {
  auto type = component_type(node);
  if (!type) return type.status();
  if (*type == "null" || *type == "ByteLevel") return Status::ok();
  if (*type == "Sequence")
    return read_sequence(node, "processors", [&](const JsonValue& p) {
      return read_post_processor(p, opening, closing);
    });
  if (*type == "RobertaProcessing" || *type == "BertProcessing") {
    auto cls = framing_id(node, "cls");
    if (!cls) return cls.status();
    auto sep = framing_id(node, "sep");
    if (!sep) return sep.status();
    opening.push_back(*cls);
    closing.push_back(*sep);
    return Status::ok();
  }
  if (*type != "TemplateProcessing")
    return unsupported(node, "type", *type,
                       "RobertaProcessing, TemplateProcessing, ByteLevel or a Sequence");
  return read_template(node, opening, closing);
}

// How the post-processor frames a sentence pair (PairFraming), found in a Sequence of
// processors too; false when it says nothing about pairs. read_post_processor has checked
// the types of the components.
Result<bool> read_pair_framing(const JsonValue& node, PairFraming& pair) {
  auto type = component_type(node);
  if (!type) return type.status();
  if (*type == "Sequence") {
    auto processors = node.array_or_null("processors");
    if (!processors) return processors.status();
    if (!*processors) return false;
    for (const JsonValue& item : (*processors)->elements()) {
      auto found = read_pair_framing(item, pair);
      if (!found || *found) return found;
    }
    return false;
  }
  if (*type == "RobertaProcessing" || *type == "BertProcessing") {
    auto cls = framing_id(node, "cls");
    if (!cls) return cls.status();
    auto sep = framing_id(node, "sep");
    if (!sep) return sep.status();
    const bool roberta = *type == "RobertaProcessing";
    pair = {.open = {*cls},
            .middle = roberta ? std::vector{*sep, *sep} : std::vector{*sep},
            .close = {*sep},
            .second_type = roberta ? 0 : 1};
    return true;
  }
  if (*type != "TemplateProcessing") return false;
  auto items = node.array_or_null("pair");
  if (!items) return items.status();
  if (!*items) return false;
  auto specials = node.object_or_null("special_tokens");
  if (!specials) return specials.status();
  PairFraming read{.second_type = 0};
  int sequences = 0;
  for (const JsonValue& item : (*items)->elements()) {
    SCION_RETURN_IF_ERROR(item.expect_object());
    if (auto sequence = item.member("Sequence")) {
      SCION_RETURN_IF_ERROR(sequence->expect_object());
      auto type_id = sequence->integer_or("type_id", 0, 0, 255);
      if (!type_id) return type_id.status();
      if (++sequences == 2) read.second_type = static_cast<int>(*type_id);
      continue;
    }
    std::vector<std::int32_t>& part = sequences == 0   ? read.open
                                      : sequences == 1 ? read.middle
                                                       : read.close;
    SCION_RETURN_IF_ERROR(template_special_ids(node, *specials, item, part));
  }
  if (sequences != 2)
    return node.error(fmt::format("pair holds {} sequences; a pair has two", sequences));
  pair = read;
  return true;
}

// The token a tokenizer_config.json entry names: "text" or {"content": "text", ...}; ""
// when absent.
Result<std::string> config_token(const JsonValue& config, const char* key) {
  const std::optional<JsonValue> v = config.member(key);
  if (!v) return std::string();
  if (v->is_string()) return v->as_string();
  if (v->is_object()) return v->string_or("content", "");
  return v->wrong_type("a token: a string or {\"content\": ...}");
}

// tokenizer_config.json's text as an object: an empty object for empty text (no file).
Result<json> parse_config(std::string_view text, const std::string& file) {
  if (text.empty()) return json::object();
  auto parsed = parse_json_document(text, file);
  if (!parsed) return parsed.status();
  if (!parsed->is_object()) return JsonValue(*parsed, file).wrong_type("an object");
  return parsed;
}

// The BPE model's settings scion does not run must be off.
Status check_model_options(const JsonValue& model) {
  if (const std::optional<JsonValue> dropout = model.member("dropout")) {
    auto p = dropout->as_number();
    if (!p) return p.status();
    if (*p != 0.0)
      return unsupported(model, "dropout", JsonValue::shown(dropout->raw()), "no dropout (null)");
  }
  for (const char* key : {"continuing_subword_prefix", "end_of_word_suffix"}) {
    auto v = model.string_or(key, "");
    if (!v) return v.status();
    if (!v->empty()) return unsupported(model, key, "'" + *v + "'", "none (null)");
  }
  return Status::ok();
}

}  // namespace

Status BpeTokenizer::read_components(const JsonValue& root) {
  auto normalizer = root.member("normalizer"), pre_tokenizer = root.member("pre_tokenizer");
  if (normalizer) SCION_RETURN_IF_ERROR(read_normalizer(*normalizer, normalizers_));
  if (pre_tokenizer) SCION_RETURN_IF_ERROR(read_pre_tokenizer(*pre_tokenizer, pre_tokenizers_));
  const auto byte_levels =
      std::count_if(pre_tokenizers_.begin(), pre_tokenizers_.end(),
                    [](const Pre& p) { return p.kind == Pre::Kind::kByteLevel; });
  byte_level_ = byte_levels > 0;
  // ByteLevel maps bytes to characters: a step after it would see those characters.
  if (byte_levels > 1 || (byte_level_ && pre_tokenizers_.back().kind != Pre::Kind::kByteLevel))
    return unsupported(root, "pre_tokenizer", "a Sequence with ByteLevel before other steps",
                       "at most one ByteLevel pre-tokenizer, last");
  if (auto decoder = root.member("decoder"))
    SCION_RETURN_IF_ERROR(read_decoder(*decoder, decoders_));
  if (auto post = root.member("post_processor"))
    SCION_RETURN_IF_ERROR(read_post_processor(*post, opening_, closing_));
  return Status::ok();
}

// model.vocab and added_tokens: every id from 0 to the largest has exactly one token.
Status BpeTokenizer::read_vocabulary(const JsonValue& root, const JsonValue& model) {
  auto vocab = model.object_or_null("vocab");
  if (!vocab) return vocab.status();
  if (!*vocab || (*vocab)->raw().empty())
    return spec_error(
        fmt::format("{}: model.vocab is not a non-empty object of token ids", root.file()));
  std::vector<std::pair<std::string, std::int32_t>> entries;
  const json& table = (*vocab)->raw();
  entries.reserve(table.size());
  for (auto it = table.begin(); it != table.end(); ++it) {
    auto id = token_id((*vocab)->nested(it.value(), it.key()));
    if (!id) return id.status();
    entries.emplace_back(it.key(), *id);
  }
  const std::size_t in_vocab = entries.size();
  auto added = root.array_or_null("added_tokens");
  if (!added) return added.status();
  for (const JsonValue& entry : *added ? (*added)->elements() : std::vector<JsonValue>()) {
    SCION_RETURN_IF_ERROR(entry.expect_object());
    AddedToken a;
    auto content = entry.required_string("content");
    if (!content) return content.status();
    if (content->empty()) return entry.error("its content is empty");
    a.content = *content;
    auto id = entry.required("id");
    if (!id) return id.status();
    auto value = token_id(*id);
    if (!value) return value.status();
    a.id = *value;
    for (auto [key, flag] :
         {std::pair{"lstrip", &a.lstrip}, std::pair{"rstrip", &a.rstrip},
          std::pair{"single_word", &a.single_word}, std::pair{"special", &a.special}}) {
      auto on = entry.bool_or(key, false);
      if (!on) return on.status();
      *flag = *on;
    }
    added_.push_back(a);
    entries.emplace_back(a.content, a.id);
  }
  std::int32_t size = 0;
  for (const auto& [token, id] : entries) size = std::max(size, id + 1);
  tokens_.assign(static_cast<std::size_t>(size), std::string());
  special_ids_.assign(static_cast<std::size_t>(size), false);
  for (const auto& [token, id] : entries) {
    std::string& slot = tokens_[static_cast<std::size_t>(id)];
    if (!slot.empty() && slot != token)
      return spec_error(
          fmt::format("{}: id {} is both '{}' and '{}'", root.file(), id, slot, token));
    slot = token;
  }
  for (std::int32_t id = 0; id < size; ++id)
    if (tokens_[static_cast<std::size_t>(id)].empty())
      return spec_error(
          fmt::format("{}: id {} has no token; ids must run from 0 without gaps", root.file(), id));
  for (std::size_t i = 0; i < in_vocab; ++i) ids_.emplace(entries[i].first, entries[i].second);
  std::vector<std::string> contents;
  for (const AddedToken& a : added_) {
    special_ids_[static_cast<std::size_t>(a.id)] = a.special;
    contents.push_back(a.content);
  }
  added_matcher_ = AddedTokenMatcher(contents);
  for (const auto* framing : {&opening_, &closing_})
    for (std::int32_t id : *framing)
      if (id >= size)
        return spec_error(
            fmt::format("{}: post_processor frames texts with id {}, which is not "
                        "in the vocabulary (ids 0 to {})",
                        root.file(), id, size - 1));
  return Status::ok();
}

Status BpeTokenizer::read_merges(const JsonValue& model) {
  auto merges = model.array_or_null("merges");
  if (!merges) return merges.status();
  if (!*merges) return Status::ok();
  const json& list = (*merges)->raw();
  for (std::size_t rank = 0; rank < list.size(); ++rank) {
    const json& m = list[rank];
    std::string left, right;
    if (m.is_string()) {
      const std::string& line = m.get_ref<const std::string&>();
      const std::size_t space = line.find(' ');
      if (space != std::string::npos && line.find(' ', space + 1) == std::string::npos) {
        left = line.substr(0, space);
        right = line.substr(space + 1);
      }
    } else if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string()) {
      left = m[0].get_ref<const std::string&>();
      right = m[1].get_ref<const std::string&>();
    }
    auto a = ids_.find(left), b = ids_.find(right), ab = ids_.find(left + right);
    if (left.empty() || right.empty() || a == ids_.end() || b == ids_.end() || ab == ids_.end())
      return (*merges)->nested(m, rank).error(
          fmt::format("{} is not two vocabulary tokens whose join is one", JsonValue::shown(m)));
    const std::uint64_t key =
        (static_cast<std::uint64_t>(static_cast<std::uint32_t>(a->second)) << 32) |
        static_cast<std::uint32_t>(b->second);
    merges_.emplace(key, std::pair<int, std::int32_t>{static_cast<int>(rank), ab->second});
  }
  return Status::ok();
}

// scion's framing: the post-processor's tokens, else tokenizer_config.json's.
Status BpeTokenizer::set_specials(const std::string& file, std::string_view config_text,
                                  const std::string& config_file) {
  auto parsed = parse_config(config_text, config_file);
  if (!parsed) return parsed.status();
  const JsonValue config(*parsed, config_file);
  auto id_of = [&](const char* key) -> Result<std::int32_t> {
    auto token = config_token(config, key);
    if (!token) return token.status();
    if (token->empty()) return kNoToken;
    for (const AddedToken& a : added_)
      if (a.content == *token) return a.id;
    auto it = ids_.find(*token);
    return it == ids_.end() ? kNoToken : it->second;
  };
  auto first_of = [&](const char* a, const char* b) -> Result<std::int32_t> {
    auto id = id_of(a);
    if (!id || *id != kNoToken) return id;
    return id_of(b);
  };
  SpecialTokens& s = specials_;
  auto cls =
      opening_.size() == 1 ? Result<std::int32_t>(opening_[0]) : first_of("cls_token", "bos_token");
  if (!cls) return cls.status();
  auto sep =
      closing_.size() == 1 ? Result<std::int32_t>(closing_[0]) : first_of("sep_token", "eos_token");
  if (!sep) return sep.status();
  s.cls = *cls;
  s.sep = *sep;
  if (s.cls == kNoToken || s.sep == kNoToken)
    return spec_error(fmt::format(
        "{}: no {} token to frame a sequence with: its post_processor adds none and no "
        "tokenizer_config.json beside it names a known {}; put the model's "
        "tokenizer_config.json (save_pretrained writes it) beside tokenizer.json",
        file, s.cls == kNoToken ? "start" : "end", s.cls == kNoToken ? "bos_token" : "eos_token"));
  auto pad = id_of("pad_token");
  if (!pad) return pad.status();
  s.pad = *pad == kNoToken ? s.sep : *pad;
  auto mask = id_of("mask_token");
  if (!mask) return mask.status();
  s.mask = *mask;
  s.unk = unk_;
  return Status::ok();
}

Result<std::unique_ptr<BpeTokenizer>> BpeTokenizer::load_hugging_face(
    const std::filesystem::path& tokenizer_json) {
  auto text = read_tokenizer_text(tokenizer_json);
  if (!text) return text.status();
  const std::filesystem::path config_file = tokenizer_json.parent_path() / "tokenizer_config.json";
  std::string config_text;
  if (std::filesystem::exists(config_file)) {
    auto read = read_tokenizer_text(config_file);
    if (!read) return read.status();
    config_text = std::move(*read);
  }
  return parse_hugging_face(*text, tokenizer_json.string(), config_text, config_file.string());
}

Result<std::unique_ptr<BpeTokenizer>> BpeTokenizer::parse_hugging_face(
    std::string_view text, const std::string& file, std::string_view config_text,
    const std::string& config_file) {
  auto parsed = parse_tokenizer_json(text, file);
  if (!parsed.is_ok()) return parsed.status();
  const JsonValue root(*parsed, file);
  auto type = component_type(root.member("model"));
  if (!type) return type.status();
  if (*type != "BPE")
    return spec_error(fmt::format("{}: model.type is {}; scion's BPE runs BPE", file, *type));
  const JsonValue model = *root.member("model");
  SCION_RETURN_IF_ERROR(check_model_options(model));

  std::unique_ptr<BpeTokenizer> tok(new BpeTokenizer());
  SCION_RETURN_IF_ERROR(tok->read_components(root));
  auto fallback = model.bool_or("byte_fallback", false);
  if (!fallback) return fallback.status();
  tok->byte_fallback_ = *fallback;
  SCION_RETURN_IF_ERROR(tok->read_vocabulary(root, model));
  SCION_RETURN_IF_ERROR(tok->read_merges(model));
  auto unk = model.string_or("unk_token", "");
  if (!unk) return unk.status();
  if (!unk->empty()) {
    auto it = tok->ids_.find(*unk);
    if (it == tok->ids_.end())
      return spec_error(fmt::format("{}: model.unk_token '{}' is not in model.vocab", file, *unk));
    tok->unk_ = it->second;
  }
  for (auto [key, flag] :
       {std::pair{"fuse_unk", &tok->fuse_unk_}, std::pair{"ignore_merges", &tok->ignore_merges_}}) {
    auto on = model.bool_or(key, false);
    if (!on) return on.status();
    *flag = *on;
  }
  SCION_RETURN_IF_ERROR(tok->set_specials(file, config_text, config_file));
  // A pair is [CLS] A [SEP] B [SEP] unless the post-processor frames pairs otherwise.
  const SpecialTokens& s = tok->specials_;
  tok->pair_ = {.open = {s.cls}, .middle = {s.sep}, .close = {s.sep}, .second_type = 0};
  if (auto post = root.member("post_processor")) {
    auto pair = read_pair_framing(*post, tok->pair_);
    if (!pair) return pair.status();
    for (const auto* part : {&tok->pair_.open, &tok->pair_.middle, &tok->pair_.close})
      for (std::int32_t id : *part)
        if (id >= tok->vocab_size())
          return spec_error(
              fmt::format("{}: post_processor frames pairs with id {}, which is not "
                          "in the vocabulary (ids 0 to {})",
                          file, id, tok->vocab_size() - 1));
  }
  return tok;
}

}  // namespace scion::text
