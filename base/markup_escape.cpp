#include "base/markup_escape.h"

#include <cstddef>
#include <cstdint>

namespace scion::base {
namespace {

constexpr std::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD

// Length of the well-formed UTF-8 sequence at text[i] (1..4), or 0 when the bytes there
// are ill-formed; then `*skip` is the length of the maximal ill-formed subpart (>= 1),
// which is replaced by one U+FFFD (Unicode 15, table 3-7).
std::size_t utf8_sequence(std::string_view text, std::size_t i, std::size_t* skip) {
  const auto byte = [&](std::size_t k) { return static_cast<unsigned char>(text[k]); };
  const unsigned char b0 = byte(i);
  std::size_t length = 0;
  unsigned char low = 0x80, high = 0xBF;  // the allowed range of the second byte
  if (b0 < 0x80) return 1;
  if (b0 >= 0xC2 && b0 <= 0xDF) length = 2;
  else if (b0 >= 0xE0 && b0 <= 0xEF) length = 3;
  else if (b0 >= 0xF0 && b0 <= 0xF4) length = 4;
  if (b0 == 0xE0) low = 0xA0;  // no overlong 3-byte forms
  if (b0 == 0xED) high = 0x9F;  // no surrogates
  if (b0 == 0xF0) low = 0x90;  // no overlong 4-byte forms
  if (b0 == 0xF4) high = 0x8F;  // nothing above U+10FFFF
  *skip = 1;
  if (length == 0) return 0;
  for (std::size_t k = 1; k < length; ++k) {
    if (i + k >= text.size()) return 0;
    const unsigned char b = byte(i + k);
    const bool in_range = k == 1 ? (b >= low && b <= high) : (b >= 0x80 && b <= 0xBF);
    if (!in_range) return 0;
    *skip = k + 1;
  }
  return length;
}

}  // namespace

std::string markup_escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  std::size_t i = 0;
  while (i < text.size()) {
    const char c = text[i];
    switch (c) {
      case '&': out += "&amp;"; ++i; continue;
      case '<': out += "&lt;"; ++i; continue;
      case '>': out += "&gt;"; ++i; continue;
      case '"': out += "&quot;"; ++i; continue;
      case '\'': out += "&#39;"; ++i; continue;
      case '\t': out += "&#9;"; ++i; continue;
      case '\n': out += "&#10;"; ++i; continue;
      case '\r': out += "&#13;"; ++i; continue;
      default: break;
    }
    const auto b = static_cast<unsigned char>(c);
    if (b < 0x20 || b == 0x7F) {
      out += kReplacement;
      ++i;
      continue;
    }
    std::size_t skip = 1;
    const std::size_t length = utf8_sequence(text, i, &skip);
    if (length == 0) {
      out += kReplacement;
      i += skip;
      continue;
    }
    const std::string_view sequence = text.substr(i, length);
    // U+FFFE and U+FFFF are not characters XML allows.
    if (sequence == "\xEF\xBF\xBE" || sequence == "\xEF\xBF\xBF")
      out += kReplacement;
    else
      out += sequence;
    i += length;
  }
  return out;
}

}  // namespace scion::base
