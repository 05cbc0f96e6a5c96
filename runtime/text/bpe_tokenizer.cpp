// Encoding of BpeTokenizer (bpe_tokenizer.h says how); decoding is in bpe_decode.cpp,
// loading in bpe_hugging_face.cpp.
#include "runtime/text/bpe_tokenizer.h"

#include <utf8proc.h>

#include <climits>

namespace scion::text {

namespace {

std::uint64_t pair_key(std::int32_t a, std::int32_t b) {
  return (static_cast<std::uint64_t>(static_cast<std::uint32_t>(a)) << 32) |
         static_cast<std::uint32_t>(b);
}

// The code point of the UTF-8 character at `pos`, and its length (1 for an invalid byte).
std::pair<int, std::size_t> char_at(std::string_view text, std::size_t pos) {
  utf8proc_int32_t c = -1;
  const utf8proc_ssize_t n =
      utf8proc_iterate(reinterpret_cast<const utf8proc_uint8_t*>(text.data() + pos),
                       static_cast<utf8proc_ssize_t>(text.size() - pos), &c);
  return n <= 0 ? std::pair<int, std::size_t>{-1, 1}
                : std::pair<int, std::size_t>{c, static_cast<std::size_t>(n)};
}

// The code point of the UTF-8 character that ends at `end`.
std::pair<int, std::size_t> char_before(std::string_view text, std::size_t end) {
  std::size_t begin = end - 1;
  while (begin > 0 && end - begin < 4 && (static_cast<unsigned char>(text[begin]) & 0xC0) == 0x80)
    --begin;
  const auto [c, n] = char_at(text, begin);
  return begin + n == end ? std::pair<int, std::size_t>{c, n} : std::pair<int, std::size_t>{-1, 1};
}

// A "word" character for single_word added tokens: alphanumeric or '_'.
bool is_word_char(int c) {
  if (c == '_') return true;
  if (c < 0) return false;
  const auto cat = utf8proc_category(c);
  return (cat >= UTF8PROC_CATEGORY_LU && cat <= UTF8PROC_CATEGORY_LO) ||
         (cat >= UTF8PROC_CATEGORY_ND && cat <= UTF8PROC_CATEGORY_NO);
}

}  // namespace

std::vector<std::int32_t> BpeTokenizer::encode(std::string_view text) const {
  std::vector<std::int32_t> ids;
  std::vector<std::size_t> matches;
  std::size_t plain_from = 0, pos = 0;
  while (pos < text.size()) {
    const AddedToken* found = nullptr;
    added_matcher_.matches_at(text, pos, matches);
    for (std::size_t index : matches) {  // longest first: the leftmost-longest match
      const AddedToken& a = added_[index];
      const std::size_t end = pos + a.content.size();
      if (a.single_word && ((pos > 0 && is_word_char(char_before(text, pos).first)) ||
                            (end < text.size() && is_word_char(char_at(text, end).first))))
        continue;
      found = &a;
      break;
    }
    if (!found) {
      ++pos;
      continue;
    }
    std::size_t start = pos, end = pos + found->content.size();
    if (found->lstrip)
      while (start > plain_from && is_unicode_space(char_before(text, start).first))
        start -= char_before(text, start).second;
    if (found->rstrip)
      while (end < text.size() && is_unicode_space(char_at(text, end).first))
        end += char_at(text, end).second;
    encode_segment(text.substr(plain_from, start - plain_from), plain_from == 0, ids);
    ids.push_back(found->id);
    pos = plain_from = end;
  }
  encode_segment(text.substr(plain_from), plain_from == 0, ids);
  return ids;
}

void BpeTokenizer::encode_segment(std::string_view text, bool at_start,
                                  std::vector<std::int32_t>& ids) const {
  if (text.empty()) return;
  std::string normalized(text);
  for (const Normalizer& n : normalizers_) {
    if (n.kind == Normalizer::Kind::kPrepend)
      normalized.insert(0, n.content);
    else
      normalized = replace_all(normalized, n.pattern, n.content);
  }
  for (const std::string& piece : pre_tokenize(std::move(normalized), at_start))
    encode_word(byte_level_ ? byte_level_encode(piece) : piece, ids);
}

std::vector<std::string> BpeTokenizer::pre_tokenize(std::string text, bool at_start) const {
  std::vector<std::string> pieces{std::move(text)};
  for (const PreTokenizer& pre : pre_tokenizers_) {
    std::vector<std::string> next;
    for (std::string& piece : pieces) {
      std::vector<std::string_view> parts;
      switch (pre.kind) {
        case PreTokenizer::Kind::kByteLevel:
          if (pre.add_prefix_space && !piece.starts_with(' ')) piece.insert(0, 1, ' ');
          if (pre.use_regex)
            parts = split_by_pattern(piece, SplitPattern::kGpt2);
          else
            parts = {piece};
          break;
        case PreTokenizer::Kind::kSplit:
          parts = split_by_pattern(piece, pre.pattern);
          break;
        case PreTokenizer::Kind::kDigits:
          parts = split_digits(piece, pre.individual_digits);
          break;
        case PreTokenizer::Kind::kMetaspace: {
          piece = replace_all(piece, " ", pre.replacement);
          const bool prepend = pre.prepend == PreTokenizer::Prepend::kAlways ||
                               (pre.prepend == PreTokenizer::Prepend::kFirst && at_start &&
                                &piece == &pieces.front());
          if (prepend && !piece.starts_with(pre.replacement)) piece.insert(0, pre.replacement);
          parts = pre.split ? split_before_each(piece, pre.replacement)
                            : std::vector<std::string_view>{piece};
          break;
        }
      }
      for (std::string_view part : parts)
        if (!part.empty()) next.emplace_back(part);
    }
    pieces = std::move(next);
  }
  return pieces;
}

void BpeTokenizer::encode_word(const std::string& word, std::vector<std::int32_t>& ids) const {
  if (ignore_merges_) {
    if (auto it = ids_.find(word); it != ids_.end()) {
      ids.push_back(it->second);
      return;
    }
  }
  std::vector<std::int32_t> symbols;
  for (std::size_t pos = 0; pos < word.size();) {
    const std::size_t n = char_at(word, pos).second;
    auto it = ids_.find(word.substr(pos, n));
    pos += n;
    if (it != ids_.end()) {
      symbols.push_back(it->second);
    } else if (byte_fallback_ && push_bytes(word.substr(pos - n, n), symbols)) {
      continue;
    } else if (unk_ != kNoToken && !(fuse_unk_ && !symbols.empty() && symbols.back() == unk_)) {
      symbols.push_back(unk_);
    }
  }
  // Merge the lowest-ranked pair (leftmost on ties) until no pair has a rank: the order
  // `tokenizers`' priority queue of (rank, position) merges in.
  for (;;) {
    int best_rank = INT_MAX;
    std::size_t best = 0;
    std::int32_t merged = 0;
    for (std::size_t i = 0; i + 1 < symbols.size(); ++i) {
      auto it = merges_.find(pair_key(symbols[i], symbols[i + 1]));
      if (it != merges_.end() && it->second.first < best_rank) {
        best_rank = it->second.first;
        best = i;
        merged = it->second.second;
      }
    }
    if (best_rank == INT_MAX) break;
    symbols[best] = merged;
    symbols.erase(symbols.begin() + static_cast<std::ptrdiff_t>(best) + 1);
  }
  ids.insert(ids.end(), symbols.begin(), symbols.end());
}

bool BpeTokenizer::push_bytes(std::string_view character,
                              std::vector<std::int32_t>& symbols) const {
  std::vector<std::int32_t> bytes;
  for (char c : character) {
    auto it = ids_.find(byte_token(static_cast<unsigned char>(c)));
    if (it == ids_.end()) return false;
    bytes.push_back(it->second);
  }
  symbols.insert(symbols.end(), bytes.begin(), bytes.end());
  return true;
}

std::vector<std::int32_t> BpeTokenizer::post_process(const std::vector<std::int32_t>& ids) const {
  std::vector<std::int32_t> out = opening_;
  out.insert(out.end(), ids.begin(), ids.end());
  out.insert(out.end(), closing_.begin(), closing_.end());
  return out;
}

void BpeTokenizer::encode_words(std::span<const std::string> words, std::vector<std::int32_t>& ids,
                                std::vector<std::int32_t>& starts) const {
  for (const std::string& word : words) {
    starts.push_back(static_cast<std::int32_t>(ids.size()));
    for (std::int32_t id : encode(" " + word)) ids.push_back(id);
  }
}

}  // namespace scion::text
