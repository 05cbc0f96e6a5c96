// Lexical swaps: entries of a lexicon replaced by other entries of the same lexicon
// (names, locations, number words), numerals nudged, and user substitution lists.
#include <algorithm>
#include <cctype>
#include <map>
#include <string>

#include "assertions/perturb_rules.h"
#include "assertions/random.h"
#include "assertions/words.h"

namespace scion::assertions {
namespace {

// A draw from `list` other than `original` (case-insensitive); empty if there is none.
std::string other_entry(const std::vector<std::string>& list, std::string_view original,
                        base::SeededRng& rng) {
  std::vector<const std::string*> candidates;
  const std::string lower_original = to_lower(original);
  for (const std::string& entry : list)
    if (to_lower(entry) != lower_original) candidates.push_back(&entry);
  if (candidates.empty()) return {};
  return *candidates[rng.below(candidates.size())];
}

// Swaps entries of `lists`; one original always gets the same replacement in a text, so
// "Maria ... Maria" stays one person.
std::string swap_entries(std::string_view text, const std::vector<std::vector<std::string>>& lists,
                         base::SeededRng& rng) {
  std::vector<std::string> phrases;
  std::vector<std::size_t> list_of;
  for (std::size_t l = 0; l < lists.size(); ++l)
    for (const std::string& entry : lists[l]) {
      phrases.push_back(entry);
      list_of.push_back(l);
    }
  std::map<std::string, std::string> chosen;
  return replace_phrases(text, phrases, [&](std::size_t index, std::string_view matched) {
    const std::string key = to_lower(matched);
    auto it = chosen.find(key);
    if (it == chosen.end()) {
      std::string replacement = other_entry(lists[list_of[index]], matched, rng);
      it = chosen
               .emplace(key, replacement.empty() ? std::string(matched)
                                                 : match_case(replacement, matched))
               .first;
    }
    return it->second;
  });
}

// A numeral within 20% of `digits` (at least 1 away), keeping `decimals` decimal places.
std::string nudge_numeral(const std::string& digits, std::size_t decimals, base::SeededRng& rng) {
  const unsigned long long n = std::stoull(digits);
  const unsigned long long spread = std::max(1ull, n / 5);
  const unsigned long long low = n > spread ? n - spread : 0;
  const unsigned long long high = n + spread;
  unsigned long long value = low + rng.below(high - low);  // high - low values besides n
  if (value >= n) ++value;
  std::string out = std::to_string(value);
  if (decimals == 0) return out;
  if (out.size() <= decimals) out.insert(0, decimals + 1 - out.size(), '0');
  out.insert(out.size() - decimals, 1, '.');
  return out;
}

bool is_digit(char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; }

}  // namespace

std::optional<std::string> perturb_swap(std::string_view text,
                                        const std::vector<std::vector<std::string>>& lists,
                                        std::uint64_t seed) {
  auto rng = base::SeededRng::from_state(seed);
  std::string out = swap_entries(text, lists, rng);
  if (out == text) return std::nullopt;
  return out;
}

std::optional<std::string> perturb_numbers(std::string_view text,
                                           const std::vector<std::vector<std::string>>& word_lists,
                                           std::uint64_t seed) {
  auto rng = base::SeededRng::from_state(seed);
  std::string out;
  std::size_t i = 0;
  while (i < text.size()) {
    const bool starts_numeral = is_digit(text[i]) && (i == 0 || !is_word_byte(text[i - 1]));
    if (!starts_numeral) {
      out += text[i++];
      continue;
    }
    std::size_t end = i;
    while (end < text.size() && is_digit(text[end])) ++end;
    std::string digits(text.substr(i, end - i));
    std::size_t decimals = 0;
    if (end + 1 < text.size() && text[end] == '.' && is_digit(text[end + 1])) {
      std::size_t frac_end = end + 1;
      while (frac_end < text.size() && is_digit(text[frac_end])) ++frac_end;
      decimals = frac_end - end - 1;
      digits += text.substr(end + 1, decimals);
      end = frac_end;
    }
    // Numerals glued to letters ("mp3", "3rd") and ones too long for 64 bits stay as they are.
    const bool plain = (end == text.size() || !is_word_byte(text[end])) && digits.size() <= 18;
    out += plain ? nudge_numeral(digits, decimals, rng) : std::string(text.substr(i, end - i));
    i = end;
  }
  out = swap_entries(out, word_lists, rng);
  if (out == text) return std::nullopt;
  return out;
}

std::optional<std::string> perturb_substitute(
    std::string_view text, const std::vector<std::pair<std::string, std::string>>& pairs,
    bool both_directions) {
  std::vector<std::string> from;
  std::vector<std::string> to;
  for (const auto& [a, b] : pairs) {
    from.push_back(a);
    to.push_back(b);
    if (both_directions) {
      from.push_back(b);
      to.push_back(a);
    }
  }
  std::string out = replace_phrases(text, from, [&](std::size_t index, std::string_view matched) {
    return match_case(to[index], matched);
  });
  if (out == text) return std::nullopt;
  return out;
}

}  // namespace scion::assertions
