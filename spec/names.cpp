#include "spec/names.h"

#include <fmt/format.h>

namespace scion::spec {
namespace {

bool is_letter_or_digit(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

bool is_separator(char c) { return c == '.' || c == '_' || c == '-'; }

// How a character the rule refuses reads in a message: printable ASCII as itself, the
// rest (control characters, bytes of UTF-8 sequences) as a hex escape.
std::string describe_character(char c) {
  const auto byte = static_cast<unsigned char>(c);
  if (byte == ' ') return "a space";
  if (byte > ' ' && byte < 0x7f) return fmt::format("'{}'", c);
  return fmt::format("byte 0x{:02x} (only ASCII is allowed)", byte);
}

std::string trim_trailing_separators(std::string text) {
  while (!text.empty() && is_separator(text.back())) text.pop_back();
  return text;
}

}  // namespace

std::string name_problem(std::string_view name) {
  if (name.empty()) return "is empty";
  if (name.size() > kMaxNameLength)
    return fmt::format("is {} characters long (at most {})", name.size(), kMaxNameLength);
  if (!is_letter_or_digit(name.front()))
    return fmt::format("starts with {}", describe_character(name.front()));
  for (char c : name)
    if (!is_letter_or_digit(c) && !is_separator(c))
      return fmt::format("contains {}", describe_character(c));
  if (name.find("..") != std::string_view::npos) return "contains '..'";
  return "";
}

std::string safe_name_like(std::string_view name) {
  std::string out;
  for (char c : name) {
    if (is_letter_or_digit(c)) {
      out.push_back(c);
    } else if (!out.empty() && !is_separator(out.back())) {
      out.push_back(is_separator(c) ? c : '-');
    }
    if (out.size() == kMaxNameLength) break;
  }
  return trim_trailing_separators(std::move(out));
}

}  // namespace scion::spec
