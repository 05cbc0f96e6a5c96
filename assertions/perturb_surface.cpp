// Surface perturbations: typos, punctuation and letter case.
#include <cctype>
#include <string>
#include <vector>

#include "assertions/perturb_rules.h"
#include "assertions/random.h"
#include "assertions/words.h"

namespace scion::assertions {
namespace {

bool is_letter(char c) { return std::isalpha(static_cast<unsigned char>(c)) != 0; }

// Positions where `op` can act: both characters of a swap are letters and differ (a
// swap of equal letters changes nothing); drop and duplicate act on letters of words with
// two or more letters, so no word vanishes.
std::vector<std::size_t> typo_positions(const std::string& text, TypoOp op) {
  std::vector<std::size_t> positions;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (!is_letter(text[i])) continue;
    if (op == TypoOp::kSwap) {
      if (i + 1 < text.size() && is_letter(text[i + 1]) && text[i] != text[i + 1])
        positions.push_back(i);
      continue;
    }
    const bool letter_before = i > 0 && is_letter(text[i - 1]);
    const bool letter_after = i + 1 < text.size() && is_letter(text[i + 1]);
    if (letter_before || letter_after) positions.push_back(i);
  }
  return positions;
}

void apply_typo(std::string& text, TypoOp op, std::size_t i) {
  switch (op) {
    case TypoOp::kSwap:
      std::swap(text[i], text[i + 1]);
      break;
    case TypoOp::kDrop:
      text.erase(i, 1);
      break;
    case TypoOp::kDuplicate:
      text.insert(i, 1, text[i]);
      break;
  }
}

bool is_sentence_punctuation(char c) {
  return std::string_view(".,!?;:").find(c) != std::string_view::npos;
}

}  // namespace

std::optional<std::string> perturb_typos(std::string_view text, int count,
                                         const std::vector<TypoOp>& ops, std::uint64_t seed) {
  auto rng = base::SeededRng::from_state(seed);
  std::string out(text);
  for (int n = 0; n < count; ++n) {
    // Draw an operation; fall back through the others when it has nowhere to act.
    const std::size_t first = rng.below(ops.size());
    bool applied = false;
    for (std::size_t k = 0; k < ops.size() && !applied; ++k) {
      const TypoOp op = ops[(first + k) % ops.size()];
      const auto positions = typo_positions(out, op);
      if (positions.empty()) continue;
      apply_typo(out, op, positions[rng.below(positions.size())]);
      applied = true;
    }
    if (!applied) break;
  }
  if (out == text) return std::nullopt;
  return out;
}

std::optional<std::string> perturb_punctuation(std::string_view text, std::string_view mode,
                                               std::string_view mark) {
  std::string stripped;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const bool decimal_point = (text[i] == '.' || text[i] == ',') && i > 0 && i + 1 < text.size() &&
                               std::isdigit(static_cast<unsigned char>(text[i - 1])) &&
                               std::isdigit(static_cast<unsigned char>(text[i + 1]));
    if (is_sentence_punctuation(text[i]) && !decimal_point) continue;
    stripped += text[i];
  }
  // "Great movie !" leaves a trailing space; drop it unless the input itself ended in one.
  const bool input_ends_in_space = !text.empty() && text.back() == ' ';
  while (!input_ends_in_space && !stripped.empty() && stripped.back() == ' ') stripped.pop_back();
  const bool can_strip = stripped != text;
  const std::size_t last = text.find_last_not_of(" \t\r\n");
  const bool can_add = last != std::string_view::npos && !is_sentence_punctuation(text[last]);
  const bool strip = mode == "strip" || (mode == "any" && can_strip);
  if (strip) {
    if (!can_strip) return std::nullopt;
    return stripped;
  }
  if (!can_add) return std::nullopt;
  std::string out(text.substr(0, last + 1));
  out += mark;
  out += text.substr(last + 1);
  return out;
}

std::optional<std::string> perturb_case(std::string_view text, std::string_view mode) {
  std::string out;
  if (mode == "upper") {
    out = to_upper(text);
  } else if (mode == "lower") {
    out = to_lower(text);
  } else {
    auto tokens = split_words(text);
    for (Token& t : tokens)
      if (t.is_word) t.text = match_case(to_lower(t.text), "X");
    out = join_tokens(tokens);
  }
  if (out == text) return std::nullopt;
  return out;
}

}  // namespace scion::assertions
