// SpecReader: typed, checked access to the YAML tree, collecting diagnostics.
//
// Every read names the key path it reads, so each diagnostic says "<what> at <path>".
// A read of an absent key (nullptr node) succeeds and leaves the default in place;
// a read of a present but invalid value reports it and returns false. The reader owns
// its diagnostics; the loader moves them out at the end.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "spec/diagnostic.h"
#include "spec/spelling.h"
#include "spec/yaml_tree.h"

namespace scion::spec {

// "a.b" + "c" -> "a.b.c"; "" + "c" -> "c".
std::string join_path(const std::string& path, std::string_view key);
std::string index_path(const std::string& path, std::size_t index);  // "a.b[3]"
// "a, b, c"
std::string join_words(std::span<const std::string_view> words);

// The value under `key` in a mapping (the first, when a key is repeated), or nullptr.
const YamlNode* find(const YamlNode& map, std::string_view key);

template <class E>
struct Choice {
  std::string_view word;
  E value;
};

class SpecReader {
 public:
  explicit SpecReader(std::string file) : file_(std::move(file)) {}

  const std::string& file() const { return file_; }
  SourceLocation location(const YamlNode& node) const { return {file_, node.line, node.column}; }

  // Records "<what> at <path><hint>" at the node's position.
  void error(const YamlNode& at, const std::string& path, const std::string& what,
             const std::string& hint = "");
  bool has_errors() const { return !errors_.empty(); }
  std::size_t error_count() const { return errors_.size(); }
  // Appends `text` to the message of error `index` (error_count() before it was reported),
  // so that one problem several keys share is reported once, naming them all.
  void append_to_error(std::size_t index, const std::string& text);
  std::vector<Diagnostic> take_errors() { return std::move(errors_); }
  // Records a warning: something valid that is probably not what the author meant.
  void warn(const YamlNode& at, const std::string& path, const std::string& what,
            const std::string& hint = "");
  std::vector<Diagnostic> take_warnings() { return std::move(warnings_); }

  // Reports anything but a mapping as "expected <what>, got ...".
  bool expect_map(const YamlNode& node, const std::string& path,
                  std::string_view what = "a mapping");
  // Reports keys outside `allowed` (with a spelling suggestion) and keys given twice.
  // `key_kind` names the keys in messages: "key", "adaptation method", ...
  void check_keys(const YamlNode& map, const std::string& path,
                  std::span<const std::string_view> allowed, std::string_view key_kind = "key");
  // Reports keys given twice in a mapping whose keys are free names (models, datasets),
  // and names that break the naming rule (spec/names.h).
  void check_unique_names(const YamlNode& map, const std::string& path, std::string_view kind);
  // Reports "missing required key '<key>' at <path>" when absent.
  const YamlNode* require(const YamlNode& map, const std::string& path, std::string_view key,
                          std::string_view expected);

  bool read_string(const YamlNode* node, const std::string& path, std::string& out);
  bool read_bool(const YamlNode* node, const std::string& path, bool& out);
  // `expected` reads after "expected ", e.g. "an integer from 1 to 64 (the base's width)".
  bool read_int(const YamlNode* node, const std::string& path, int& out, std::int64_t min,
                std::int64_t max, const std::string& expected);
  bool read_uint64(const YamlNode* node, const std::string& path, std::uint64_t& out);
  // Accepts min itself only when !min_exclusive.
  bool read_float(const YamlNode* node, const std::string& path, float& out, double min,
                  bool min_exclusive, double max, bool max_exclusive, const std::string& expected);
  bool read_string_list(const YamlNode* node, const std::string& path,
                        std::vector<std::string>& out);
  bool read_int_list(const YamlNode* node, const std::string& path, std::vector<int>& out,
                     std::int64_t min, std::int64_t max, const std::string& expected);

  template <class E>
  bool read_choice(const YamlNode* node, const std::string& path,
                   std::span<const Choice<E>> choices, E& out, std::string_view what) {
    if (node == nullptr) return true;
    std::string word;
    if (!read_string(node, path, word)) return false;
    std::vector<std::string_view> words;
    for (const Choice<E>& c : choices) {
      if (c.word == word) {
        out = c.value;
        return true;
      }
      words.push_back(c.word);
    }
    report_unknown(*node, path, word, words, what);
    return false;
  }

  // "unknown <what> '<word>' at <path> — did you mean ...?" or "(expected one of: ...)".
  void report_unknown(const YamlNode& node, const std::string& path, std::string_view word,
                      std::span<const std::string_view> known, std::string_view what);

 private:
  std::string file_;
  std::vector<Diagnostic> errors_;
  std::vector<Diagnostic> warnings_;
};

}  // namespace scion::spec
