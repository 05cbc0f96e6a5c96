// A bounded YAML reader: text -> a small immutable tree with source positions.
//
// yaml-cpp's own node API expands aliases lazily and walks them again on every visit, so
// a few lines of "billion laughs" cost exponential time, and it silently merges nothing
// about duplicate keys. This reader drives yaml-cpp's event parser instead and builds its
// own tree, enforcing limits as it goes: input size, nesting depth and the number of nodes
// counting every alias expansion. Aliases share the anchored subtree (no copy), and
// recursive aliases are refused. Duplicate map keys are kept so the loader can report
// them. Every failure is a Diagnostic; nothing throws out of parse_yaml.
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "spec/diagnostic.h"

namespace scion::spec {

struct YamlNode {
  enum class Kind { kNull, kScalar, kSequence, kMap };
  Kind kind = Kind::kNull;
  int line = 0;         // 1-based
  int column = 0;       // 1-based
  std::string value;    // scalars only
  bool quoted = false;  // scalar written quoted or tagged: always a string, never a number
  std::vector<std::shared_ptr<const YamlNode>> items;  // sequences
  std::vector<std::pair<std::shared_ptr<const YamlNode>, std::shared_ptr<const YamlNode>>>
      entries;                    // maps, in file order, duplicates kept
  std::size_t expanded_size = 1;  // nodes in this subtree, alias expansions included

  bool is_map() const { return kind == Kind::kMap; }
  bool is_sequence() const { return kind == Kind::kSequence; }
  bool is_scalar() const { return kind == Kind::kScalar; }
  bool is_null() const { return kind == Kind::kNull; }
};

struct YamlLimits {
  std::size_t max_bytes = 16u << 20;  // a spec is hand-written: 16 MiB is generous
  std::size_t max_nodes = 200'000;    // after alias expansion
  int max_depth = 64;                 // a spec nests about 6 deep
};

struct YamlParse {
  std::shared_ptr<const YamlNode> root;  // null when the text holds no document
  std::optional<Diagnostic> error;       // set when the text was refused
};

YamlParse parse_yaml(std::string_view text, const std::string& display_name,
                     const YamlLimits& limits = {});

// "a mapping", "a list", "'x'", "nothing (null)": for "expected X, got Y" messages.
std::string describe(const YamlNode& node);

// `text` cut to at most `max_bytes` at a UTF-8 character boundary, with "..." when cut,
// so that messages quoting user text stay valid UTF-8 (JSON output requires it).
std::string shorten(std::string_view text, std::size_t max_bytes = 40);

}  // namespace scion::spec
