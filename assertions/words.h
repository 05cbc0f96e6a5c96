// Word-level text helpers shared by the perturbations: splitting a sentence into word
// and non-word tokens that join back to the exact original, case matching, and
// whole-word phrase replacement. ASCII letters and digits, any byte >= 0x80 (so UTF-8
// letters stay inside words) and apostrophes between word characters make up words.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace scion::assertions {

struct Token {
  std::string text;
  bool is_word = false;
};

// Splits `text` into alternating word / non-word tokens; concatenating them gives `text`.
std::vector<Token> split_words(std::string_view text);
std::string join_tokens(const std::vector<Token>& tokens);

bool is_word_byte(char c);
std::string to_lower(std::string_view text);
std::string to_upper(std::string_view text);

// `replacement` written in the case pattern of `original`: ALL CAPS (two or more
// letters, none lower case), Capitalised, or unchanged.
std::string match_case(std::string_view replacement, std::string_view original);

// Scans `text` left to right. At each word start it tries `phrases`, longest first,
// case-insensitively and as whole words; a match is replaced by
// replace(index of the phrase in `phrases`, the matched text). Returns the new text.
std::string replace_phrases(
    std::string_view text, const std::vector<std::string>& phrases,
    const std::function<std::string(std::size_t, std::string_view)>& replace);

}  // namespace scion::assertions
