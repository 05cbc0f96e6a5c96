#include "spec/spelling.h"

#include <algorithm>
#include <vector>

namespace scion::spec {

std::size_t edit_distance(std::string_view a, std::string_view b) {
  const std::size_t n = a.size(), m = b.size();
  // Three rows suffice for the adjacent-swap rule.
  std::vector<std::size_t> before(m + 1), previous(m + 1), current(m + 1);
  for (std::size_t j = 0; j <= m; ++j) previous[j] = j;
  for (std::size_t i = 1; i <= n; ++i) {
    current[0] = i;
    for (std::size_t j = 1; j <= m; ++j) {
      const std::size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      current[j] = std::min({previous[j] + 1, current[j - 1] + 1, previous[j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        current[j] = std::min(current[j], before[j - 2] + 1);
    }
    std::swap(before, previous);
    std::swap(previous, current);
  }
  return previous[m];
}

std::string closest_match(std::string_view word, std::span<const std::string_view> candidates) {
  // Words are short: more than a third of the letters wrong is a different word.
  const std::size_t allowed = std::max<std::size_t>(1, (word.size() + 1) / 3);
  std::string best;
  std::size_t best_distance = allowed + 1;
  for (std::string_view candidate : candidates) {
    if (word.size() > 64 || candidate == word) continue;  // long input is never a typo
    const std::size_t d = edit_distance(word, candidate);
    // Replacing every letter of a short word is not a typo ('x' is not 'q').
    if (d >= word.size() || d >= candidate.size()) continue;
    if (d < best_distance) {
      best_distance = d;
      best = candidate;
    }
  }
  return best;
}

std::string did_you_mean(std::string_view word, std::span<const std::string_view> candidates) {
  const std::string match = closest_match(word, candidates);
  return match.empty() ? "" : " \u2014 did you mean '" + match + "'?";
}

}  // namespace scion::spec
