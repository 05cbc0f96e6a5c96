// Text for HTML and SVG: the short forms and number formats the report uses. Escaping is
// base::markup_escape (base/markup_escape.h): every string from the spec or the store goes
// through it, so a model named `odd "name" <x>&y` shows as written and cannot break the
// page.
#pragma once

#include <string>
#include <string_view>

namespace scion::report {

// At most `max_chars` UTF-8 characters of `text`, with "…" when cut (a label inside a box).
std::string shorten(std::string_view text, std::size_t max_chars);

// 0.1234 -> "0.123", 12345.6 -> "1.23e+04": 3 significant digits, compact.
std::string short_number(double value);
// 0.125 -> "12.5%"; whole percentages without decimals ("40%").
std::string percent(double fraction);

}  // namespace scion::report
