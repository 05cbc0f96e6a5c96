// TextTemplate: a sentence with slots filled from lexicons, the generator of MFT cases.
//
// Syntax (docs/testing.md, "Templates"):
//   {noun}      a value from lexicon `noun`
//   {a:noun}    the same slot with its indefinite article: "an apple", "a movie"
//   {noun2}     an independent slot drawn from `noun` (when no lexicon `noun2` exists):
//               trailing digits name a second slot of the same lexicon; slots of one
//               lexicon always take different values ("{name1} met {name2}")
//   {{ and }}   literal braces
// A slot key used twice ("{name} ... {name}") takes one value in both places.
//
// expand_templates() turns templates into fills: the full cross product when it fits in
// max_cases, otherwise a seeded sample of distinct fills. Results depend only on the
// templates, the lexicons and the seed. TextTemplate is an immutable value.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "assertions/lexicon.h"
#include "base/status.h"

namespace scion::assertions {

class TextTemplate {
 public:
  // Parses `text`. `where` prefixes error messages (a file:line and key path, e.g.
  // "scion.yaml:12:5: test 'neg', body.templates[1]"); errors add the 1-based column in
  // the template: unknown lexicon, unclosed or unmatched brace, empty slot, empty template.
  static Result<TextTemplate> parse(std::string_view text, const LexiconSet& lexicons,
                                    std::string_view where);

  struct Slot {
    std::string key;                  // "noun2"
    std::string lexicon;              // "noun"
    std::vector<std::string> values;  // copied from the lexicon
  };
  const std::vector<Slot>& slots() const { return slots_; }
  const std::string& source() const { return source_; }

  // The text with slot i set to slots()[i].values[choice[i]].
  // REQUIRES: choice.size() == slots().size(), each index in range.
  std::string render(const std::vector<std::size_t>& choice) const;

 private:
  struct Piece {
    std::string literal;  // text before the slot
    int slot = -1;        // index into slots_, or -1 for trailing text only
    bool article = false;
    bool capitalize_article = false;  // the slot opens the sentence
  };
  std::string source_;
  std::vector<Slot> slots_;
  std::vector<Piece> pieces_;
};

// One generated sentence and what filled it.
struct TemplateFill {
  std::string text;
  std::size_t template_index = 0;
  std::vector<std::pair<std::string, std::string>> values;  // slot key -> value, in slot order
};

// Fills the templates, at most max_cases in all (shared evenly; a template with fewer
// fills leaves its share to the later ones). Deterministic given `seed`.
std::vector<TemplateFill> expand_templates(const std::vector<TextTemplate>& templates,
                                           std::size_t max_cases, std::uint64_t seed);

// "a" or "an" for `word` ("an hour", "a university"), lower case.
std::string_view indefinite_article(std::string_view word);

}  // namespace scion::assertions
