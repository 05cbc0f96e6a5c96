#include "runtime/text/added_token_matcher.h"

#include <algorithm>

namespace scion::text {

AddedTokenMatcher::AddedTokenMatcher(const std::vector<std::string>& tokens) {
  sorted_.reserve(tokens.size());
  for (std::size_t i = 0; i < tokens.size(); ++i)
    if (!tokens[i].empty()) sorted_.emplace_back(tokens[i], i);
  // Stable: of equal tokens the first keeps its place and is the one matched.
  std::stable_sort(sorted_.begin(), sorted_.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  sorted_.erase(std::unique(sorted_.begin(), sorted_.end(),
                            [](const auto& a, const auto& b) { return a.first == b.first; }),
                sorted_.end());
}

void AddedTokenMatcher::matches_at(std::string_view text, std::size_t pos,
                                   std::vector<std::size_t>& matches) const {
  matches.clear();
  // [lo, hi): the tokens whose first k bytes are text[pos, pos + k). Sorted order puts a
  // token of exactly k bytes first among them.
  auto lo = sorted_.begin(), hi = sorted_.end();
  for (std::size_t k = 0; lo != hi; ++k) {
    if (lo->first.size() == k) {
      matches.push_back(lo->second);
      ++lo;
    }
    if (pos + k >= text.size() || lo == hi) break;
    const char c = text[pos + k];
    // Every token left in the range is longer than k.
    lo = std::lower_bound(lo, hi, c, [k](const auto& t, char v) {
      return static_cast<unsigned char>(t.first[k]) < static_cast<unsigned char>(v);
    });
    hi = std::upper_bound(lo, hi, c, [k](char v, const auto& t) {
      return static_cast<unsigned char>(v) < static_cast<unsigned char>(t.first[k]);
    });
  }
  std::reverse(matches.begin(), matches.end());
}

}  // namespace scion::text
