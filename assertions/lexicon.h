// Lexicons: named word lists that fill the slots of test templates ({name}, {pos_adj})
// and feed the swap perturbations.
//
// A LexiconSet starts from the built-in lexicons (assertions/lexicons/*.txt, compiled in)
// and takes more from the spec (Workspace::lexicons), from a test's own `lexicons:` key,
// or from files with one entry per line. A later definition of a name replaces the
// earlier one, so a spec can override a built-in list. A LexiconSet is a value;
// const access is thread-safe.
#pragma once

#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "spec/workspace.h"

namespace scion::assertions {

class LexiconSet {
 public:
  // An empty set (no built-ins).
  LexiconSet() = default;

  // The built-in lexicons only.
  static LexiconSet builtin();

  // The built-ins plus the workspace's `lexicons:` (which replace built-ins of the same
  // name). Fails with a spec error naming the lexicon if one is empty or badly named.
  static Result<LexiconSet> for_workspace(const spec::Workspace& workspace);

  // Adds or replaces a lexicon. `origin` names where it came from, for error messages
  // ("scion.yaml: lexicons.cities"). Fails if the name is not an identifier
  // ([A-Za-z_][A-Za-z0-9_]*), or the list is empty or holds an empty entry.
  Status add(const std::string& name, std::vector<std::string> entries, std::string_view origin);

  // The lexicon called `name`, or nullptr.
  const std::vector<std::string>* find(std::string_view name) const;
  std::vector<std::string> names() const;

 private:
  std::map<std::string, std::vector<std::string>, std::less<>> lexicons_;
};

// Reads a lexicon file: one entry per line, surrounding white space trimmed, blank lines
// and lines starting with '#' skipped. Fails with an I/O error naming the path, or a
// spec error if no entry is left.
Result<std::vector<std::string>> read_lexicon_file(const std::filesystem::path& path);

// True for names that templates can refer to: [A-Za-z_][A-Za-z0-9_]*.
bool is_lexicon_name(std::string_view name);

// One built-in lexicon's description, for `docs/testing.md` and listings.
struct BuiltinLexiconInfo {
  std::string name;
  std::string description;
  std::size_t size = 0;
};
std::vector<BuiltinLexiconInfo> builtin_lexicon_catalog();

}  // namespace scion::assertions
