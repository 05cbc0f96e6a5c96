#include "assertions/words.h"

#include <algorithm>
#include <cctype>
#include <numeric>

namespace scion::assertions {

bool is_word_byte(char c) {
  const auto u = static_cast<unsigned char>(c);
  return std::isalnum(u) || u >= 0x80;
}

std::vector<Token> split_words(std::string_view text) {
  std::vector<Token> tokens;
  std::size_t i = 0;
  while (i < text.size()) {
    const bool word = is_word_byte(text[i]);
    std::size_t j = i + 1;
    while (j < text.size()) {
      // An apostrophe joins two word characters: "isn't", "O'Brien".
      const bool joins =
          word && text[j] == '\'' && j + 1 < text.size() && is_word_byte(text[j + 1]);
      if (!joins && is_word_byte(text[j]) != word) break;
      ++j;
    }
    tokens.push_back({std::string(text.substr(i, j - i)), word});
    i = j;
  }
  return tokens;
}

std::string join_tokens(const std::vector<Token>& tokens) {
  std::string out;
  for (const Token& t : tokens) out += t.text;
  return out;
}

std::string to_lower(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string to_upper(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

std::string match_case(std::string_view replacement, std::string_view original) {
  int letters = 0, lower = 0;
  for (char c : original) {
    const auto u = static_cast<unsigned char>(c);
    if (std::isalpha(u)) ++letters;
    if (std::islower(u)) ++lower;
  }
  if (letters >= 2 && lower == 0) return to_upper(replacement);
  std::string out(replacement);
  if (!original.empty() && std::isupper(static_cast<unsigned char>(original[0])) && !out.empty())
    out[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(out[0])));
  return out;
}

std::string replace_phrases(
    std::string_view text, const std::vector<std::string>& phrases,
    const std::function<std::string(std::size_t, std::string_view)>& replace) {
  std::vector<std::size_t> order(phrases.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return phrases[a].size() > phrases[b].size();
  });
  auto matches_at = [&](std::size_t pos, const std::string& phrase) {
    if (phrase.empty() || pos + phrase.size() > text.size()) return false;
    for (std::size_t k = 0; k < phrase.size(); ++k)
      if (std::tolower(static_cast<unsigned char>(text[pos + k])) !=
          std::tolower(static_cast<unsigned char>(phrase[k])))
        return false;
    const std::size_t end = pos + phrase.size();
    return end == text.size() || !is_word_byte(text[end]);
  };
  std::string out;
  std::size_t i = 0;
  while (i < text.size()) {
    std::size_t matched = phrases.size();
    if (i == 0 || !is_word_byte(text[i - 1]))
      for (std::size_t index : order)
        if (matches_at(i, phrases[index])) {
          matched = index;
          break;
        }
    if (matched == phrases.size()) {
      out += text[i++];
      continue;
    }
    out += replace(matched, text.substr(i, phrases[matched].size()));
    i += phrases[matched].size();
  }
  return out;
}

}  // namespace scion::assertions
