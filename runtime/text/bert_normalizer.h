// BERT's text normaliser and pre-tokeniser, as Hugging Face `tokenizers` runs them
// (normalizers::BertNormalizer, pre_tokenizers::BertPreTokenizer), with utf8proc for the
// Unicode tables.
//
// normalize(), in the order `tokenizers` applies the options:
//   clean_text            drop U+0000, U+FFFD and control characters (categories Cc, Cf,
//                         Co, Cs, Cn other than \t \n \r); every whitespace becomes ' '
//   handle_chinese_chars  put spaces around CJK ideographs, so each is a word
//   strip_accents         NFD, then drop nonspacing marks (Mn)
//   lowercase             simple Unicode lower-case mapping per character
// pre_tokenize(): split at whitespace (dropped) and around each punctuation character
// (ASCII punctuation, or a Unicode P* category), which stands alone as a word.
// Invalid UTF-8 bytes are dropped. Pure functions; thread-safe.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace scion::text {

struct BertNormalizerOptions {
  bool clean_text = true;
  bool handle_chinese_chars = true;
  bool strip_accents = true;  // `tokenizers` defaults it to `lowercase` when null
  bool lowercase = true;
};

std::string bert_normalize(std::string_view text, const BertNormalizerOptions& options);
std::vector<std::string> bert_pre_tokenize(std::string_view normalized);

// Number of Unicode characters in valid UTF-8 `word` (WordPiece's word-length limit
// counts characters, not bytes).
std::size_t utf8_length(std::string_view word);

}  // namespace scion::text
