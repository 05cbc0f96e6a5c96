// WordPieceTokenizer from a Hugging Face tokenizer.json (wordpiece_tokenizer.h says how it
// encodes); kept apart from the vocab.txt reader, since the file format is its own.
#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <tuple>

#include "runtime/text/tokenizer_json.h"
#include "runtime/text/wordpiece_tokenizer.h"

namespace scion::text {

namespace {

using nlohmann::json;

Status unsupported(const std::string& file, const std::string& key, const std::string& found,
                   const char* expected) {
  return spec_error(fmt::format("{}: {} is {}; scion reads {} (a BERT-family tokenizer)", file,
                                key, found, expected));
}

// Whether one item of a TemplateProcessing "single" list is {"SpecialToken": {"id": id}}.
Result<bool> is_special_token(const JsonValue& item, const char* id) {
  SCION_RETURN_IF_ERROR(item.expect_object());
  auto special = item.object_or_null("SpecialToken");
  if (!special) return special.status();
  if (!*special) return false;
  auto named = (*special)->string_or("id", "");
  if (!named) return named.status();
  return *named == id;
}

// A post-processor that frames one text as [CLS] text [SEP]: BertProcessing, or the
// TemplateProcessing `tokenizers` writes for BERT.
Result<bool> frames_cls_sep(const std::optional<JsonValue>& post) {
  auto type = component_type(post);
  if (!type) return type.status();
  if (*type == "BertProcessing") return true;
  if (*type != "TemplateProcessing") return false;
  auto single = post->array_or_null("single");
  if (!single) return single.status();
  if (!*single || (*single)->raw().size() != 3) return false;
  const std::vector<JsonValue> items = (*single)->elements();
  auto first = is_special_token(items[0], "[CLS]");
  if (!first) return first.status();
  auto last = is_special_token(items[2], "[SEP]");
  if (!last) return last.status();
  SCION_RETURN_IF_ERROR(items[1].expect_object());
  return *first && items[1].has("Sequence") && *last;
}

// Checks that the component `key` of the file is of type `expected`.
Status expect_component(const JsonValue& root, const char* key, const char* expected) {
  auto type = component_type(root.member(key));
  if (!type) return type.status();
  if (*type != expected)
    return unsupported(std::string(root.file()), std::string(key) + ".type", *type, expected);
  return Status::ok();
}

}  // namespace

Status WordPieceTokenizer::read_vocab(const JsonValue& model) {
  auto vocab = model.object_or_null("vocab");
  if (!vocab) return vocab.status();
  if (!*vocab || (*vocab)->raw().empty())
    return spec_error(
        fmt::format("{}: model.vocab is not a non-empty object of token ids", model.file()));
  const json& entries = (*vocab)->raw();
  const auto size = static_cast<std::int64_t>(entries.size());
  tokens_.assign(entries.size(), std::string());
  for (auto it = entries.begin(); it != entries.end(); ++it) {
    auto id = (*vocab)->nested(it.value(), it.key()).as_integer(0, size - 1);
    if (!id) return id.status();
    std::string& slot = tokens_[static_cast<std::size_t>(*id)];
    if (!slot.empty())
      return spec_error(
          fmt::format("{}: model.vocab gives id {} to both '{}' and '{}'; ids must "
                      "be unique",
                      model.file(), *id, slot, it.key()));
    slot = it.key();
    ids_.emplace(it.key(), static_cast<std::int32_t>(*id));
  }
  return Status::ok();
}

Status WordPieceTokenizer::read_normalizer(const JsonValue& root) {
  auto norm = root.required("normalizer");
  if (!norm) return norm.status();
  BertNormalizerOptions& o = normalizer_;
  for (auto [key, out, fallback] :
       {std::tuple{"clean_text", &o.clean_text, true},
        std::tuple{"handle_chinese_chars", &o.handle_chinese_chars, true},
        std::tuple{"lowercase", &o.lowercase, true}}) {
    auto flag = norm->bool_or(key, fallback);
    if (!flag) return flag.status();
    *out = *flag;
  }
  auto strip = norm->bool_or("strip_accents", o.lowercase);  // null: as lowercase
  if (!strip) return strip.status();
  o.strip_accents = *strip;
  lower_case_ = o.lowercase;
  return Status::ok();
}

// Added tokens are found in the raw text before normalising; each must be an id of the
// vocabulary, which sizes the embedding.
Status WordPieceTokenizer::read_added_tokens(const JsonValue& root) {
  auto added = root.array_or_null("added_tokens");
  if (!added) return added.status();
  if (!*added) return Status::ok();
  std::vector<std::string> contents;
  for (const JsonValue& entry : (*added)->elements()) {
    SCION_RETURN_IF_ERROR(entry.expect_object());
    auto content = entry.required_string("content");
    if (!content) return content.status();
    auto id = entry.required("id");
    if (!id) return id.status();
    auto value = id->as_integer(0, static_cast<std::int64_t>(tokens_.size()) - 1);
    if (!value) return value.status();
    if (content->empty()) return entry.error("its content is empty");
    added_tokens_.emplace_back(*content, static_cast<std::int32_t>(*value));
    contents.push_back(*content);
  }
  added_matcher_ = AddedTokenMatcher(contents);
  return Status::ok();
}

Result<std::unique_ptr<WordPieceTokenizer>> WordPieceTokenizer::load_hugging_face(
    const std::filesystem::path& tokenizer_json) {
  auto text = read_tokenizer_text(tokenizer_json);
  if (!text) return text.status();
  return parse_hugging_face(*text, tokenizer_json.string());
}

Result<std::unique_ptr<WordPieceTokenizer>> WordPieceTokenizer::parse_hugging_face(
    std::string_view text, const std::string& file) {
  auto parsed = parse_tokenizer_json(text, file);
  if (!parsed.is_ok()) return parsed.status();
  const JsonValue root(*parsed, file);
  SCION_RETURN_IF_ERROR(expect_component(root, "model", "WordPiece"));
  SCION_RETURN_IF_ERROR(expect_component(root, "normalizer", "BertNormalizer"));
  SCION_RETURN_IF_ERROR(expect_component(root, "pre_tokenizer", "BertPreTokenizer"));
  auto framed = frames_cls_sep(root.member("post_processor"));
  if (!framed) return framed.status();
  if (!*framed) {
    auto type = component_type(root.member("post_processor"));
    return unsupported(file, "post_processor", type ? *type : "?",
                       "[CLS] $A [SEP] (BertProcessing or that TemplateProcessing)");
  }

  std::unique_ptr<WordPieceTokenizer> tok(new WordPieceTokenizer());
  tok->hugging_face_ = true;
  const JsonValue model = *root.member("model");
  SCION_RETURN_IF_ERROR(tok->read_vocab(model));
  auto prefix = model.string_or("continuing_subword_prefix", "##");
  if (!prefix) return prefix.status();
  tok->continuation_ = *prefix;
  auto max_chars = model.integer_or("max_input_chars_per_word", 100, 0, 1 << 30);
  if (!max_chars) return max_chars.status();
  tok->max_word_chars_ = static_cast<std::size_t>(*max_chars);
  SCION_RETURN_IF_ERROR(tok->read_normalizer(root));
  SCION_RETURN_IF_ERROR(tok->read_added_tokens(root));
  SCION_RETURN_IF_ERROR(tok->set_specials(file, "add it to model.vocab and added_tokens"));
  return tok;
}

void WordPieceTokenizer::encode_hugging_face(std::string_view text,
                                             std::vector<std::int32_t>& ids) const {
  auto encode_plain = [&](std::string_view piece) {
    for (const std::string& word : bert_pre_tokenize(bert_normalize(piece, normalizer_)))
      encode_word(word, ids);
  };
  std::vector<std::size_t> matches;
  std::size_t start = 0, pos = 0;
  while (pos < text.size()) {
    added_matcher_.matches_at(text, pos, matches);
    if (matches.empty()) {  // the leftmost-longest added token, as `tokenizers` finds it
      ++pos;
      continue;
    }
    const auto& [content, id] = added_tokens_[matches.front()];
    encode_plain(text.substr(start, pos - start));
    ids.push_back(id);
    pos += content.size();
    start = pos;
  }
  encode_plain(text.substr(start));
}

}  // namespace scion::text
