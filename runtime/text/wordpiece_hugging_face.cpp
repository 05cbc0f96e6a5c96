// WordPieceTokenizer from a Hugging Face tokenizer.json (wordpiece_tokenizer.h says how it
// encodes); kept apart from the vocab.txt reader, since the file format is its own.
#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>

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

// A post-processor that frames one text as [CLS] text [SEP]: BertProcessing, or the
// TemplateProcessing `tokenizers` writes for BERT.
bool frames_cls_sep(const json& post) {
  const std::string type = component_type(post);
  if (type == "BertProcessing") return true;
  if (type != "TemplateProcessing") return false;
  const json& single = post.value("single", json::array());
  if (!single.is_array() || single.size() != 3) return false;
  auto special = [&](std::size_t i, const char* id) {
    return single[i].contains("SpecialToken") && single[i]["SpecialToken"].value("id", "") == id;
  };
  return special(0, "[CLS]") && single[1].contains("Sequence") && special(2, "[SEP]");
}

}  // namespace

Result<std::unique_ptr<WordPieceTokenizer>> WordPieceTokenizer::load_hugging_face(
    const std::filesystem::path& tokenizer_json) {
  const std::string file = tokenizer_json.string();
  auto parsed = read_tokenizer_json(tokenizer_json);
  if (!parsed.is_ok()) return parsed.status();
  const json& root = *parsed;
  const json& model = root.value("model", json());
  if (component_type(model) != "WordPiece")
    return unsupported(file, "model.type", component_type(model), "WordPiece");
  if (component_type(root.value("normalizer", json())) != "BertNormalizer")
    return unsupported(file, "normalizer.type", component_type(root.value("normalizer", json())),
                       "BertNormalizer");
  if (component_type(root.value("pre_tokenizer", json())) != "BertPreTokenizer")
    return unsupported(file, "pre_tokenizer.type", component_type(root.value("pre_tokenizer", json())),
                       "BertPreTokenizer");
  if (!frames_cls_sep(root.value("post_processor", json())))
    return unsupported(file, "post_processor", component_type(root.value("post_processor", json())),
                       "[CLS] $A [SEP] (BertProcessing or that TemplateProcessing)");

  std::unique_ptr<WordPieceTokenizer> tok(new WordPieceTokenizer());
  tok->hugging_face_ = true;
  const json& vocab = model.value("vocab", json());
  if (!vocab.is_object() || vocab.empty())
    return spec_error(fmt::format("{}: model.vocab is not a non-empty object of token ids", file));
  tok->tokens_.assign(vocab.size(), std::string());
  for (const auto& [token, id] : vocab.items()) {
    if (!id.is_number_unsigned() || id.get<std::size_t>() >= vocab.size() ||
        !tok->tokens_[id.get<std::size_t>()].empty())
      return spec_error(fmt::format("{}: model.vocab['{}'] = {} is not a unique id below {}",
                                    file, token, id.dump(), vocab.size()));
    tok->tokens_[id.get<std::size_t>()] = token;
    tok->ids_.emplace(token, id.get<std::int32_t>());
  }
  tok->continuation_ = model.value("continuing_subword_prefix", std::string("##"));
  tok->max_word_chars_ = model.value("max_input_chars_per_word", std::size_t{100});

  const json& norm = root["normalizer"];
  BertNormalizerOptions& o = tok->normalizer_;
  o.clean_text = norm.value("clean_text", true);
  o.handle_chinese_chars = norm.value("handle_chinese_chars", true);
  o.lowercase = norm.value("lowercase", true);
  const json& strip = norm.value("strip_accents", json());
  o.strip_accents = strip.is_boolean() ? strip.get<bool>() : o.lowercase;
  tok->lower_case_ = o.lowercase;

  for (const json& added : root.value("added_tokens", json::array())) {
    const std::string content = added.value("content", std::string());
    if (content.empty() || !added.contains("id") || !added["id"].is_number_unsigned()) continue;
    tok->added_tokens_.emplace_back(content, added["id"].get<std::int32_t>());
  }
  std::stable_sort(tok->added_tokens_.begin(), tok->added_tokens_.end(),
                   [](const auto& a, const auto& b) { return a.first.size() > b.first.size(); });
  SCION_RETURN_IF_ERROR(tok->set_specials(file, "add it to model.vocab and added_tokens"));
  return tok;
}

void WordPieceTokenizer::encode_hugging_face(std::string_view text,
                                             std::vector<std::int32_t>& ids) const {
  auto encode_plain = [&](std::string_view piece) {
    for (const std::string& word : bert_pre_tokenize(bert_normalize(piece, normalizer_)))
      encode_word(word, ids);
  };
  std::size_t start = 0, pos = 0;
  while (pos < text.size()) {
    const auto added = std::find_if(added_tokens_.begin(), added_tokens_.end(), [&](const auto& a) {
      return text.substr(pos).starts_with(a.first);
    });
    if (added == added_tokens_.end()) {
      ++pos;
      continue;
    }
    encode_plain(text.substr(start, pos - start));
    ids.push_back(added->second);
    pos += added->first.size();
    start = pos;
  }
  encode_plain(text.substr(start));
}

}  // namespace scion::text
