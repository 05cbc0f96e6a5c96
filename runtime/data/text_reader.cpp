// Plain text: one example per non-blank line, no labels.
#include <fmt/format.h>

#include "runtime/data/format_readers.h"

namespace scion::data {

std::vector<Line> split_lines(std::string_view contents) {
  std::vector<Line> lines;
  int number = 0;
  std::size_t start = 0;
  while (start < contents.size()) {
    std::size_t end = contents.find('\n', start);
    if (end == std::string_view::npos) end = contents.size();
    std::string_view text = contents.substr(start, end - start);
    if (!text.empty() && text.back() == '\r') text.remove_suffix(1);
    lines.push_back({text, ++number});
    start = end + 1;
  }
  return lines;
}

bool is_blank(std::string_view line) {
  return line.find_first_not_of(" \t\r\f\v") == std::string_view::npos;
}

ExampleSet parse_text_lines(std::string_view contents, const std::string& file,
                            ProblemList& problems) {
  ExampleSet set;
  for (const Line& line : split_lines(contents))
    if (!is_blank(line.text))
      set.examples.push_back({std::string(line.text), kNoLabel, line.number});
  if (set.examples.empty())
    problems.add(spec_error(
        fmt::format("{}: only blank lines; a text dataset needs one example per line", file)));
  return set;
}

}  // namespace scion::data
