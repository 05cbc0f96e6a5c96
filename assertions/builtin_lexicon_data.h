// The built-in lexicons as compiled-in data.
//
// The table is generated at build time from assertions/lexicons/*.txt by
// assertions/lexicons/embed_lexicons.py, so the word lists stay plain text files that are
// easy to review and extend. Code outside assertions/ uses LexiconSet (lexicon.h) instead.
#pragma once

#include <cstddef>

namespace scion::assertions {

struct BuiltinLexiconData {
  const char* name;         // the file's stem: {name} in templates
  const char* description;  // the file's '#' first line
  const char* const* entries;
  std::size_t size;
};

extern const BuiltinLexiconData kBuiltinLexiconData[];  // sorted by name
extern const std::size_t kBuiltinLexiconCount;

}  // namespace scion::assertions
