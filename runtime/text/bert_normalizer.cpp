#include "runtime/text/bert_normalizer.h"

#include <utf8proc.h>

namespace scion::text {

namespace {

// Decodes `text` into code points, dropping invalid bytes.
std::vector<utf8proc_int32_t> code_points(std::string_view text) {
  std::vector<utf8proc_int32_t> out;
  const auto* p = reinterpret_cast<const utf8proc_uint8_t*>(text.data());
  utf8proc_ssize_t left = static_cast<utf8proc_ssize_t>(text.size());
  while (left > 0) {
    utf8proc_int32_t c = 0;
    const utf8proc_ssize_t n = utf8proc_iterate(p, left, &c);
    if (n <= 0) {  // an invalid byte: skip it
      ++p;
      --left;
      continue;
    }
    out.push_back(c);
    p += n;
    left -= n;
  }
  return out;
}

void append_utf8(std::string& out, utf8proc_int32_t c) {
  utf8proc_uint8_t buffer[4];
  const utf8proc_ssize_t n = utf8proc_encode_char(c, buffer);
  out.append(reinterpret_cast<const char*>(buffer), static_cast<std::size_t>(n));
}

// Rust's char::is_whitespace: the Unicode White_Space property.
bool is_unicode_whitespace(utf8proc_int32_t c) {
  switch (c) {
    case 0x09: case 0x0A: case 0x0B: case 0x0C: case 0x0D: case 0x20: case 0x85: case 0xA0:
    case 0x1680: case 0x2028: case 0x2029: case 0x202F: case 0x205F: case 0x3000:
      return true;
    default:
      return c >= 0x2000 && c <= 0x200A;
  }
}

bool is_other(utf8proc_int32_t c) {
  switch (utf8proc_category(c)) {
    case UTF8PROC_CATEGORY_CC: case UTF8PROC_CATEGORY_CF: case UTF8PROC_CATEGORY_CS:
    case UTF8PROC_CATEGORY_CO: case UTF8PROC_CATEGORY_CN:
      return true;
    default:
      return false;
  }
}

bool is_control(utf8proc_int32_t c) {
  return c != '\t' && c != '\n' && c != '\r' && is_other(c);
}

bool is_chinese_char(utf8proc_int32_t c) {
  return (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0x3400 && c <= 0x4DBF) ||
         (c >= 0x20000 && c <= 0x2A6DF) || (c >= 0x2A700 && c <= 0x2B73F) ||
         (c >= 0x2B740 && c <= 0x2B81F) || (c >= 0x2B920 && c <= 0x2CEAF) ||
         (c >= 0xF900 && c <= 0xFAFF) || (c >= 0x2F800 && c <= 0x2FA1F);
}

bool is_punctuation(utf8proc_int32_t c) {
  if ((c >= 33 && c <= 47) || (c >= 58 && c <= 64) || (c >= 91 && c <= 96) ||
      (c >= 123 && c <= 126))
    return true;
  switch (utf8proc_category(c)) {
    case UTF8PROC_CATEGORY_PC: case UTF8PROC_CATEGORY_PD: case UTF8PROC_CATEGORY_PS:
    case UTF8PROC_CATEGORY_PE: case UTF8PROC_CATEGORY_PI: case UTF8PROC_CATEGORY_PF:
    case UTF8PROC_CATEGORY_PO:
      return true;
    default:
      return false;
  }
}

// NFD of one code point, appended to `out`.
void decompose(utf8proc_int32_t c, std::vector<utf8proc_int32_t>& out) {
  utf8proc_int32_t buffer[32];
  int last_boundclass = 0;
  const utf8proc_ssize_t n = utf8proc_decompose_char(
      c, buffer, 32, static_cast<utf8proc_option_t>(UTF8PROC_DECOMPOSE), &last_boundclass);
  if (n < 0 || n > 32) {
    out.push_back(c);
    return;
  }
  out.insert(out.end(), buffer, buffer + n);
}

}  // namespace

std::string bert_normalize(std::string_view text, const BertNormalizerOptions& options) {
  std::vector<utf8proc_int32_t> chars = code_points(text);
  std::vector<utf8proc_int32_t> next;
  next.reserve(chars.size());
  if (options.clean_text) {
    for (utf8proc_int32_t c : chars) {
      if (c == 0 || c == 0xFFFD || is_control(c)) continue;
      next.push_back(is_unicode_whitespace(c) ? ' ' : c);
    }
    chars.swap(next);
    next.clear();
  }
  if (options.handle_chinese_chars) {
    for (utf8proc_int32_t c : chars) {
      if (is_chinese_char(c)) {
        next.push_back(' ');
        next.push_back(c);
        next.push_back(' ');
      } else {
        next.push_back(c);
      }
    }
    chars.swap(next);
    next.clear();
  }
  if (options.strip_accents) {
    std::vector<utf8proc_int32_t> decomposed;
    for (utf8proc_int32_t c : chars) decompose(c, decomposed);
    for (utf8proc_int32_t c : decomposed)
      if (utf8proc_category(c) != UTF8PROC_CATEGORY_MN) next.push_back(c);
    chars.swap(next);
    next.clear();
  }
  std::string out;
  out.reserve(text.size());
  for (utf8proc_int32_t c : chars) append_utf8(out, options.lowercase ? utf8proc_tolower(c) : c);
  return out;
}

std::vector<std::string> bert_pre_tokenize(std::string_view normalized) {
  std::vector<std::string> words;
  std::string current;
  auto flush = [&] {
    if (!current.empty()) words.push_back(std::move(current));
    current.clear();
  };
  for (utf8proc_int32_t c : code_points(normalized)) {
    if (is_unicode_whitespace(c)) {
      flush();
    } else if (is_punctuation(c)) {
      flush();
      append_utf8(current, c);
      flush();
    } else {
      append_utf8(current, c);
    }
  }
  flush();
  return words;
}

std::size_t utf8_length(std::string_view word) {
  std::size_t n = 0;
  for (char c : word) n += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  return n;
}

}  // namespace scion::text
