// Rule-based grammar perturbations: contractions and negation. English only; the rules
// act on auxiliary verbs, which is where English negation attaches.
#include <array>
#include <set>
#include <string>
#include <utility>

#include "assertions/perturb_rules.h"
#include "assertions/words.h"

namespace scion::assertions {
namespace {

struct Contraction {
  std::string_view contracted;
  std::string_view expanded;
};

// "it's" and "he's" also stand for "it has"; expansion picks "is", the common reading.
constexpr std::array<Contraction, 45> kContractions = {{
    {"isn't", "is not"},      {"aren't", "are not"},     {"wasn't", "was not"},
    {"weren't", "were not"},  {"don't", "do not"},       {"doesn't", "does not"},
    {"didn't", "did not"},    {"can't", "cannot"},       {"couldn't", "could not"},
    {"won't", "will not"},    {"wouldn't", "would not"}, {"shouldn't", "should not"},
    {"haven't", "have not"},  {"hasn't", "has not"},     {"hadn't", "had not"},
    {"mustn't", "must not"},  {"I'm", "I am"},           {"you're", "you are"},
    {"we're", "we are"},      {"they're", "they are"},   {"it's", "it is"},
    {"he's", "he is"},        {"she's", "she is"},       {"that's", "that is"},
    {"there's", "there is"},  {"what's", "what is"},     {"who's", "who is"},
    {"I've", "I have"},       {"you've", "you have"},    {"we've", "we have"},
    {"they've", "they have"}, {"I'll", "I will"},        {"you'll", "you will"},
    {"we'll", "we will"},     {"they'll", "they will"},  {"he'll", "he will"},
    {"she'll", "she will"},   {"it'll", "it will"},      {"I'd", "I would"},
    {"you'd", "you would"},   {"he'd", "he would"},      {"she'd", "she would"},
    {"we'd", "we would"},     {"they'd", "they would"},  {"let's", "let us"},
}};

// Replaces every whole-word occurrence of each `from` (longest first) with its `to`.
std::string replace_all(std::string_view text,
                        const std::vector<std::pair<std::string, std::string>>& rules) {
  std::vector<std::string> phrases;
  for (const auto& rule : rules) phrases.push_back(rule.first);
  return replace_phrases(text, phrases, [&](std::size_t index, std::string_view matched) {
    return match_case(rules[index].second, matched);
  });
}

const std::set<std::string>& auxiliaries_taking_not() {
  static const std::set<std::string> words = {"is",    "are",    "was",   "were", "am",    "will",
                                              "would", "should", "could", "must", "might", "may",
                                              "shall", "do",     "does",  "did"};
  return words;
}

bool is_negated(const std::vector<Token>& tokens) {
  for (const Token& t : tokens) {
    if (!t.is_word) continue;
    const std::string w = to_lower(t.text);
    if (w == "not" || w == "cannot" || w == "never" || w.ends_with("n't")) return true;
  }
  return false;
}

// "not" in the case of the word it follows: "IS NOT", "is not", "Can" -> "Cannot".
std::string not_for(std::string_view word) {
  return word.size() > 1 && word == to_upper(word) ? "NOT" : "not";
}

// Index of the next word token after `i`, or tokens.size().
std::size_t next_word(const std::vector<Token>& tokens, std::size_t i) {
  for (std::size_t j = i + 1; j < tokens.size(); ++j)
    if (tokens[j].is_word) return j;
  return tokens.size();
}

std::optional<std::string> add_negation(std::vector<Token> tokens) {
  if (is_negated(tokens)) return std::nullopt;
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    if (!tokens[i].is_word) continue;
    const std::string w = to_lower(tokens[i].text);
    const std::size_t next = next_word(tokens, i);
    const std::string next_w = next < tokens.size() ? to_lower(tokens[next].text) : "";
    const bool is_do = w == "do" || w == "does" || w == "did";
    const std::string negator = not_for(tokens[i].text);
    if (w == "can") {
      tokens[i].text += negator;
    } else if (auxiliaries_taking_not().count(w) && !(is_do && next == tokens.size())) {
      // "do" needs a verb after it ("do like" -> "do not like"); a final "do" is a main verb.
      tokens[i].text.append(" ").append(negator);
    } else if ((w == "has" || w == "have" || w == "had") && next_w == "been") {
      tokens[i].text.append(" ").append(negator);
    } else {
      continue;
    }
    return join_tokens(tokens);
  }
  return std::nullopt;
}

std::optional<std::string> remove_negation(std::vector<Token> tokens) {
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    if (!tokens[i].is_word) continue;
    const std::string w = to_lower(tokens[i].text);
    if (w == "cannot" || w == "can't" || w == "won't" || w == "shan't") {
      const std::string base = w == "won't" ? "will" : w == "shan't" ? "shall" : "can";
      tokens[i].text = match_case(base, tokens[i].text);
      return join_tokens(tokens);
    }
    if (w.ends_with("n't") && w != "ain't") {
      tokens[i].text.resize(tokens[i].text.size() - 3);
      return join_tokens(tokens);
    }
    if (w == "not" && i >= 2 && tokens[i - 2].is_word) {
      const std::string before = to_lower(tokens[i - 2].text);
      if (auxiliaries_taking_not().count(before) || before == "has" || before == "have" ||
          before == "had") {
        tokens.erase(tokens.begin() + static_cast<std::ptrdiff_t>(i) - 1,
                     tokens.begin() + static_cast<std::ptrdiff_t>(i) + 1);
        return join_tokens(tokens);
      }
    }
  }
  return std::nullopt;
}

}  // namespace

std::optional<std::string> perturb_contractions(std::string_view text, std::string_view mode) {
  std::vector<std::pair<std::string, std::string>> expand, contract;
  for (const Contraction& c : kContractions) {
    expand.emplace_back(c.contracted, c.expanded);
    contract.emplace_back(c.expanded, c.contracted);
  }
  if (mode == "expand" || mode == "any") {
    std::string out = replace_all(text, expand);
    if (out != text) return out;
    if (mode == "expand") return std::nullopt;
  }
  std::string out = replace_all(text, contract);
  if (out == text) return std::nullopt;
  return out;
}

std::optional<std::string> perturb_negation(std::string_view text, std::string_view mode) {
  auto tokens = split_words(text);
  if (mode == "add") return add_negation(std::move(tokens));
  if (mode == "remove") return remove_negation(std::move(tokens));
  if (is_negated(tokens)) return remove_negation(std::move(tokens));
  return add_negation(std::move(tokens));
}

}  // namespace scion::assertions
