// WordPiece: BERT's subword tokenizer over a vocabulary file (vocab.txt).
//
// The file holds one token per line; a token's id is its 0-based line number. Pieces that
// continue a word start with "##". The vocabulary must contain [PAD], [UNK], [CLS], [SEP]
// and [MASK]. Encoding first splits the text into words at ASCII whitespace and around
// each ASCII punctuation character, lower-cases ASCII letters when the vocabulary holds no
// upper-case ASCII letter (an "uncased" vocabulary), then splits each word greedily into
// the longest pieces found in the vocabulary, left to right. A word with no such split, or
// longer than 100 bytes, becomes one [UNK]. Non-ASCII text is kept as is (no accent
// stripping or CJK splitting); pieces only end on UTF-8 character boundaries.
//
// load_hugging_face() reads a Hugging Face tokenizer.json with a WordPiece model instead,
// and encodes as `tokenizers` does: added tokens ([CLS], [MASK], ...) found in the raw
// text first, then BERT's normaliser and pre-tokeniser (runtime/text/bert_normalizer.h),
// then WordPiece with the file's unk token, "##" prefix and word-length limit (in
// characters). Its post-processor must frame a text as [CLS] text [SEP], which is what
// the batcher does (tests/unit/data_tokenizer_test.cpp checks ids against `tokenizers`).
// Immutable after load(); thread-safe.
#pragma once

#include <string>
#include <unordered_map>
#include <vector>

#include "base/json_value.h"
#include "runtime/text/added_token_matcher.h"
#include "runtime/text/bert_normalizer.h"
#include "runtime/text/tokenizer.h"

namespace scion::text {

class WordPieceTokenizer final : public Tokenizer {
 public:
  // Errors: kNotFound (file missing or unreadable), kSpecError naming file:line (empty
  // line, duplicate token) or naming the missing special token.
  static Result<std::unique_ptr<WordPieceTokenizer>> load(const std::filesystem::path& vocab_file);
  // Errors: kNotFound, or kSpecError naming the file and the key that is missing or of a
  // kind scion does not run (a model other than WordPiece, another normaliser,
  // pre-tokeniser or post-processor).
  static Result<std::unique_ptr<WordPieceTokenizer>> load_hugging_face(
      const std::filesystem::path& tokenizer_json);
  // The same from the file's text (`file` names it in messages).
  static Result<std::unique_ptr<WordPieceTokenizer>> parse_hugging_face(std::string_view text,
                                                                        const std::string& file);

  std::vector<std::int32_t> encode(std::string_view text) const override;
  std::string decode(const std::vector<std::int32_t>& ids) const override;
  int vocab_size() const override { return static_cast<int>(tokens_.size()); }
  const SpecialTokens& special_tokens() const override { return specials_; }
  // Each word encoded alone, as BERT's pre-tokeniser splits words anyway.
  void encode_words(std::span<const std::string> words, std::vector<std::int32_t>& ids,
                    std::vector<std::int32_t>& starts) const override;

  bool lower_cases() const { return lower_case_; }

 private:
  WordPieceTokenizer() = default;
  void encode_word(std::string_view word, std::vector<std::int32_t>& ids) const;
  void encode_hugging_face(std::string_view text, std::vector<std::int32_t>& ids) const;
  // Parts of load_hugging_face: model.vocab, the BertNormalizer's options, added_tokens.
  Status read_vocab(const JsonValue& model);
  Status read_normalizer(const JsonValue& root);
  Status read_added_tokens(const JsonValue& root);
  // Finds [PAD], [UNK], [CLS], [SEP] and [MASK]; `remedy` ends the error for a missing one.
  Status set_specials(const std::string& source, const char* remedy);
  std::int32_t find(const std::string& token) const;

  std::vector<std::string> tokens_;                    // id -> token
  std::unordered_map<std::string, std::int32_t> ids_;  // token -> id
  SpecialTokens specials_;
  bool lower_case_ = false;
  // Set by load_hugging_face().
  bool hugging_face_ = false;
  BertNormalizerOptions normalizer_;
  std::vector<std::pair<std::string, std::int32_t>> added_tokens_;  // (content, id), file order
  AddedTokenMatcher added_matcher_;                                 // finds added_tokens_ by index
  std::string continuation_ = "##";
  std::size_t max_word_chars_ = 100;
};

}  // namespace scion::text
