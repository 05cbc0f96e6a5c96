#include "runtime/text/byte_level.h"

#include <utf8proc.h>

#include <array>
#include <unordered_map>

namespace scion::text {

namespace {

// One character of the text: its code point (-1 for an invalid byte) and byte range.
struct Char {
  int c = -1;
  std::size_t begin = 0, end = 0;
};

std::vector<Char> characters(std::string_view text) {
  std::vector<Char> out;
  const auto* p = reinterpret_cast<const utf8proc_uint8_t*>(text.data());
  std::size_t pos = 0;
  while (pos < text.size()) {
    utf8proc_int32_t c = 0;
    const utf8proc_ssize_t n =
        utf8proc_iterate(p + pos, static_cast<utf8proc_ssize_t>(text.size() - pos), &c);
    if (n <= 0) {
      out.push_back({-1, pos, pos + 1});
      ++pos;
      continue;
    }
    out.push_back({c, pos, pos + static_cast<std::size_t>(n)});
    pos += static_cast<std::size_t>(n);
  }
  return out;
}

bool is_letter(int c) {
  if (c < 0) return false;
  switch (utf8proc_category(c)) {
    case UTF8PROC_CATEGORY_LU: case UTF8PROC_CATEGORY_LL: case UTF8PROC_CATEGORY_LT:
    case UTF8PROC_CATEGORY_LM: case UTF8PROC_CATEGORY_LO:
      return true;
    default:
      return false;
  }
}

bool is_number(int c) {
  if (c < 0) return false;
  switch (utf8proc_category(c)) {
    case UTF8PROC_CATEGORY_ND: case UTF8PROC_CATEGORY_NL: case UTF8PROC_CATEGORY_NO:
      return true;
    default:
      return false;
  }
}

bool is_newline(int c) { return c == '\r' || c == '\n'; }
// [^\s\p{L}\p{N}]
bool is_symbol(int c) { return !is_unicode_space(c) && !is_letter(c) && !is_number(c); }

// The regex engine's view of the text: the length (in characters) of each alternative's
// match at a position, 0 where it does not match.
class Matcher {
 public:
  explicit Matcher(const std::vector<Char>& chars) : s_(chars), n_(chars.size()) {}

  int at(std::size_t i) const { return i < n_ ? s_[i].c : -2; }

  // 's|'t|'re|'ve|'m|'ll|'d, case-sensitively or not.
  std::size_t contraction(std::size_t i, bool ignore_case) const {
    if (at(i) != '\'') return 0;
    auto lower = [&](std::size_t k) {
      const int c = at(k);
      return ignore_case && c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c;
    };
    const int a = lower(i + 1), b = lower(i + 2);
    if (a == 's' || a == 't' || a == 'm' || a == 'd') return 2;
    if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) return 3;
    return 0;
  }

  // `prefix`? then one or more characters of `cls`, at most `most` of them.
  template <class Prefix, class Class>
  std::size_t run(std::size_t i, Prefix prefix, Class cls, std::size_t most = SIZE_MAX) const {
    for (std::size_t skip : {std::size_t{1}, std::size_t{0}}) {
      if (skip && !(i < n_ && prefix(at(i)))) continue;
      std::size_t k = i + skip;
      while (k < n_ && k - i - skip < most && cls(at(k))) ++k;
      if (k > i + skip) return k - i;
    }
    return 0;
  }

  std::size_t space_run_end(std::size_t i) const {
    std::size_t k = i;
    while (k < n_ && is_unicode_space(at(k))) ++k;
    return k;
  }

  // \s+(?!\S)|\s+
  std::size_t trailing_spaces(std::size_t i) const {
    const std::size_t k = space_run_end(i);
    if (k == i) return 0;
    if (k == n_ || k - i == 1) return k - i;
    return k - i - 1;  // leave the last space to the word after it
  }

  // \s*[\r\n]+: up to and including the last line break of the space run.
  std::size_t spaces_to_newline(std::size_t i) const {
    const std::size_t k = space_run_end(i);
    for (std::size_t e = k; e > i; --e)
      if (is_newline(at(e - 1))) return e - i;
    return 0;
  }

  std::size_t gpt2(std::size_t i) const {
    auto space = [](int c) { return c == ' '; };
    if (std::size_t m = contraction(i, false)) return m;
    if (std::size_t m = run(i, space, is_letter)) return m;
    if (std::size_t m = run(i, space, is_number)) return m;
    if (std::size_t m = run(i, space, is_symbol)) return m;
    return trailing_spaces(i);
  }

  std::size_t llama3(std::size_t i) const {
    if (std::size_t m = contraction(i, true)) return m;
    auto not_letter_digit_newline = [](int c) {
      return !is_newline(c) && !is_letter(c) && !is_number(c);
    };
    if (std::size_t m = run(i, not_letter_digit_newline, is_letter)) return m;
    if (std::size_t m = run(i, [](int) { return false; }, is_number, 3)) return m;
    if (std::size_t m = run(i, [](int c) { return c == ' '; }, is_symbol)) {
      while (is_newline(at(i + m))) ++m;
      return m;
    }
    if (std::size_t m = spaces_to_newline(i)) return m;
    return trailing_spaces(i);
  }

 private:
  const std::vector<Char>& s_;
  std::size_t n_;
};

std::string_view slice(std::string_view text, const std::vector<Char>& chars, std::size_t from,
                       std::size_t to) {
  return text.substr(chars[from].begin, chars[to - 1].end - chars[from].begin);
}

const std::array<std::string, 256>& byte_table() {
  static const std::array<std::string, 256> table = [] {
    std::array<std::string, 256> t;
    int next = 256;
    for (int b = 0; b < 256; ++b) {
      const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE;
      const int c = printable ? b : next++;
      utf8proc_uint8_t buffer[4];
      const utf8proc_ssize_t n = utf8proc_encode_char(c, buffer);
      t[static_cast<std::size_t>(b)].assign(reinterpret_cast<const char*>(buffer),
                                            static_cast<std::size_t>(n));
    }
    return t;
  }();
  return table;
}

}  // namespace

bool is_unicode_space(int c) {
  switch (c) {
    case 0x09: case 0x0A: case 0x0B: case 0x0C: case 0x0D: case 0x20: case 0x85: case 0xA0:
    case 0x1680: case 0x2028: case 0x2029: case 0x202F: case 0x205F: case 0x3000:
      return true;
    default:
      return c >= 0x2000 && c <= 0x200A;
  }
}

std::optional<SplitPattern> split_pattern_named(std::string_view regex) {
  if (regex == R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)")
    return SplitPattern::kGpt2;
  if (regex == R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)")
    return SplitPattern::kLlama3;
  return std::nullopt;
}

std::vector<std::string_view> split_by_pattern(std::string_view text, SplitPattern pattern) {
  const std::vector<Char> chars = characters(text);
  const Matcher matcher(chars);
  std::vector<std::string_view> pieces;
  std::size_t i = 0, unmatched = 0;
  while (i < chars.size()) {
    const std::size_t m = pattern == SplitPattern::kGpt2 ? matcher.gpt2(i) : matcher.llama3(i);
    if (m == 0) {
      ++i;
      continue;
    }
    if (unmatched < i) pieces.push_back(slice(text, chars, unmatched, i));
    pieces.push_back(slice(text, chars, i, i + m));
    i += m;
    unmatched = i;
  }
  if (unmatched < chars.size()) pieces.push_back(slice(text, chars, unmatched, chars.size()));
  return pieces;
}

std::vector<std::string_view> split_digits(std::string_view text, bool individual) {
  const std::vector<Char> chars = characters(text);
  std::vector<std::string_view> pieces;
  std::size_t start = 0;
  for (std::size_t i = 0; i < chars.size(); ++i) {
    const bool digit = is_number(chars[i].c);
    const bool joins = i > start && is_number(chars[i - 1].c) == digit && !(digit && individual);
    if (i > start && !joins) {
      pieces.push_back(slice(text, chars, start, i));
      start = i;
    }
  }
  if (start < chars.size()) pieces.push_back(slice(text, chars, start, chars.size()));
  return pieces;
}

std::vector<std::string_view> split_before_each(std::string_view text,
                                               std::string_view delimiter) {
  std::vector<std::string_view> out;
  std::size_t start = 0;
  for (std::size_t hit = text.find(delimiter, 1); hit != std::string_view::npos;
       hit = text.find(delimiter, hit + delimiter.size())) {
    out.push_back(text.substr(start, hit - start));
    start = hit;
  }
  out.push_back(text.substr(start));
  return out;
}

std::string replace_all(std::string_view text, std::string_view from, std::string_view to) {
  if (from.empty()) return std::string(text);
  std::string out;
  std::size_t pos = 0;
  for (std::size_t hit = text.find(from); hit != std::string_view::npos;
       hit = text.find(from, pos)) {
    out.append(text.substr(pos, hit - pos)).append(to);
    pos = hit + from.size();
  }
  return out.append(text.substr(pos));
}

const std::string& byte_to_unicode(unsigned char byte) { return byte_table()[byte]; }

std::string byte_level_encode(std::string_view text) {
  std::string out;
  out.reserve(text.size() * 2);
  for (char c : text) out += byte_to_unicode(static_cast<unsigned char>(c));
  return out;
}

std::optional<std::string> byte_level_decode(std::string_view token) {
  static const std::unordered_map<std::string, char> inverse = [] {
    std::unordered_map<std::string, char> m;
    for (int b = 0; b < 256; ++b)
      m.emplace(byte_to_unicode(static_cast<unsigned char>(b)), static_cast<char>(b));
    return m;
  }();
  std::string out;
  for (const Char& ch : characters(token)) {
    auto it = inverse.find(std::string(token.substr(ch.begin, ch.end - ch.begin)));
    if (it == inverse.end()) return std::nullopt;
    out += it->second;
  }
  return out;
}

}  // namespace scion::text
