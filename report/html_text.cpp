#include "report/html_text.h"

#include <fmt/format.h>

#include <cmath>

namespace scion::report {

std::string shorten(std::string_view text, std::size_t max_chars) {
  std::size_t chars = 0, i = 0;
  for (; i < text.size(); ++i) {
    if ((static_cast<unsigned char>(text[i]) & 0xC0) == 0x80) continue;  // continuation byte
    if (chars == max_chars) break;
    ++chars;
  }
  if (i >= text.size()) return std::string(text);
  // Leave room for the ellipsis: cut one character earlier.
  std::size_t cut = i;
  do {
    --cut;
  } while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80);
  return std::string(text.substr(0, cut)) + "…";
}

std::string short_number(double value) {
  if (!std::isfinite(value)) return value != value ? "nan" : (value > 0 ? "inf" : "-inf");
  const double magnitude = std::abs(value);
  if (magnitude != 0 && (magnitude >= 1e4 || magnitude < 1e-3)) return fmt::format("{:.2e}", value);
  return fmt::format("{:.3g}", value);
}

std::string percent(double fraction) {
  const double p = 100 * fraction;
  if (std::abs(p - std::round(p)) < 0.05) return fmt::format("{:.0f}%", p);
  return fmt::format("{:.1f}%", p);
}

}  // namespace scion::report
