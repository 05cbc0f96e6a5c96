// AddedTokenMatcher: finds a tokenizer's added tokens ([CLS], <|endoftext|>, and any a
// tokenizer.json adds) at a position of a text, longest first.
//
// Tokenizers look for added tokens at every position of the raw text. Comparing each added
// token there costs (text length × added tokens): a file with 10^6 added tokens took 40 s
// for a 2,000-character text. The matcher keeps the tokens sorted and narrows the range of
// tokens sharing the text's next byte with two binary searches per byte, so finding every
// match at a position costs (longest token × log(added tokens)), whatever their number,
// and memory is the tokens themselves. `tokenizers` uses Aho-Corasick for the same reason.
// Immutable after build(); thread-safe.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace scion::text {

class AddedTokenMatcher {
 public:
  // `tokens[i]` is matched as index i; empty tokens are ignored. Duplicates match once, as
  // the first of them.
  explicit AddedTokenMatcher(const std::vector<std::string>& tokens = {});

  bool empty() const { return sorted_.empty(); }

  // The indices of the tokens that `text` holds at `pos`, longest first, appended to
  // `matches` (cleared first).
  void matches_at(std::string_view text, std::size_t pos, std::vector<std::size_t>& matches) const;

 private:
  std::vector<std::pair<std::string, std::size_t>> sorted_;  // (token, index), by token
};

}  // namespace scion::text
