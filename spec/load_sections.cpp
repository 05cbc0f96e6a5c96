// The smaller top-level sections: share, tests, assertions and lexicons. Tests and
// assertions are checked for structure here; their meaning belongs to assertions/.
#include <fmt/format.h>

#include <set>

#include "spec/keys.h"
#include "spec/loader_parts.h"

namespace scion::spec::detail {
namespace {

// The YAML value as JSON: plain scalars that read as numbers, booleans or null become
// those; quoted scalars stay strings.
nlohmann::json to_json(const YamlNode& node) {
  switch (node.kind) {
    case YamlNode::Kind::kNull:
      return nullptr;
    case YamlNode::Kind::kSequence: {
      nlohmann::json list = nlohmann::json::array();
      for (const auto& item : node.items) list.push_back(to_json(*item));
      return list;
    }
    case YamlNode::Kind::kMap: {
      nlohmann::json map = nlohmann::json::object();
      for (const auto& [k, v] : node.entries) map[k->is_scalar() ? k->value : ""] = to_json(*v);
      return map;
    }
    case YamlNode::Kind::kScalar:
      break;
  }
  const std::string& text = node.value;
  if (node.quoted) return text;
  if (text == "true") return true;
  if (text == "false") return false;
  const auto parsed = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (parsed.is_number()) return parsed;
  return text;
}

// Records where each key and list item inside `node` (at key path `path`) is.
void record_locations(const SpecReader& r, const YamlNode& node, const std::string& path,
                      BodyLocations& out) {
  for (std::size_t i = 0; i < node.items.size(); ++i) {
    const std::string item = index_path(path, i);
    out.emplace(item, r.location(*node.items[i]));
    record_locations(r, *node.items[i], item, out);
  }
  for (const auto& [k, v] : node.entries) {
    if (!k->is_scalar()) continue;
    const std::string key_path = join_path(path, k->value);
    out.emplace(key_path, r.location(*k));
    record_locations(r, *v, key_path, out);
  }
}

// Reads `models: [...]` naming defined models, each once.
void read_model_list(SpecReader& r, const YamlNode* node, const std::string& path,
                     const Names& names, std::vector<std::string>& out) {
  if (!r.read_string_list(node, path, out)) return;
  std::set<std::string> seen;
  for (std::size_t i = 0; i < out.size(); ++i) {
    if (!check_reference(r, *node->items[i], index_path(path, i), out[i], names.models, "model"))
      continue;
    if (!seen.insert(out[i]).second)
      r.error(*node->items[i], index_path(path, i),
              fmt::format("model '{}' is listed twice", out[i]));
  }
}

// Keys shared by named entries of a section: a mapping of mappings.
template <class Entry, class ReadEntry>
void load_named(SpecReader& r, const YamlNode& section, const std::string& section_name,
                std::string_view kind, std::vector<Entry>& out, ReadEntry read_entry) {
  if (!r.expect_map(section, section_name,
                    fmt::format("a mapping from {} names to {}s", kind, kind)))
    return;
  r.check_unique_names(section, section_name, kind);
  std::set<std::string> seen;
  for (const auto& [key, value] : section.entries) {
    if (!key->is_scalar() || key->value.empty() || !seen.insert(key->value).second) continue;
    const std::string path = join_path(section_name, key->value);
    if (!r.expect_map(*value, path)) continue;
    Entry entry;
    entry.name = key->value;
    entry.location = r.location(*key);
    read_entry(*value, path, entry);
    out.push_back(std::move(entry));
  }
}

// Everything except `known` keys, as JSON, for the assertions module to interpret.
nlohmann::json body_without(const YamlNode& node, std::span<const std::string_view> known) {
  nlohmann::json body = nlohmann::json::object();
  for (const auto& [k, v] : node.entries) {
    if (!k->is_scalar()) continue;
    bool is_known = false;
    for (std::string_view word : known) is_known = is_known || word == k->value;
    if (!is_known) body[k->value] = to_json(*v);
  }
  return body;
}

// Reports keys given twice; the body takes any other key.
void check_duplicate_keys(SpecReader& r, const YamlNode& node, const std::string& path) {
  std::set<std::string> seen;
  for (const auto& [k, v] : node.entries)
    if (k->is_scalar() && !seen.insert(k->value).second)
      r.error(*k, join_path(path, k->value), fmt::format("duplicate key '{}'", k->value),
              "; each key may appear once");
}

// Reads a required single-word key from a closed list.
void read_word(SpecReader& r, const YamlNode& node, const std::string& path, std::string_view key,
               std::span<const std::string_view> words, std::string_view what, std::string& out) {
  const YamlNode* n = r.require(node, path, key, fmt::format("one of: {}", join_words(words)));
  if (!n || !r.read_string(n, join_path(path, key), out)) return;
  for (std::string_view w : words)
    if (w == out) return;
  r.report_unknown(*n, join_path(path, key), out, words, what);
}

}  // namespace

void load_shares(SpecReader& r, const YamlNode& section, const Names& names,
                 std::vector<Share>& out) {
  load_named(r, section, "share", "share", out,
             [&](const YamlNode& node, const std::string& path, Share& share) {
               r.check_keys(node, path, keys::kShare);
               const YamlNode* models = r.require(node, path, "models", "the models that share");
               read_model_list(r, models, join_path(path, "models"), names, share.models);
               if (models && models->is_sequence() && models->items.size() < 2)
                 r.error(*models, join_path(path, "models"),
                         "expected at least two models to share modules");
               const YamlNode* modules =
                   r.require(node, path, "modules", "parameter-name globs of the shared modules");
               if (r.read_string_list(modules, join_path(path, "modules"), share.modules) &&
                   modules && share.modules.empty())
                 r.error(*modules, join_path(path, "modules"),
                         "expected at least one parameter-name glob");
             });
}

void load_tests(SpecReader& r, const YamlNode& section, const Names& names,
                std::vector<TestSpec>& out) {
  load_named(r, section, "tests", "test", out,
             [&](const YamlNode& node, const std::string& path, TestSpec& test) {
               check_duplicate_keys(r, node, path);
               read_word(r, node, path, "type", keys::kTestTypes, "test type", test.type);
               if (const YamlNode* cap =
                       r.require(node, path, "capability", "what the test probes, e.g. Negation"))
                 r.read_string(cap, join_path(path, "capability"), test.capability);
               read_model_list(r, find(node, "models"), join_path(path, "models"), names,
                               test.models);
               r.read_float(find(node, "max_failure_rate"), join_path(path, "max_failure_rate"),
                            test.max_failure_rate, 0, false, 1, false, "a fraction from 0 to 1");
               test.body = body_without(node, keys::kTest);
               test.body_locations.emplace(path, test.location);
               record_locations(r, node, path, test.body_locations);
             });
}

void load_assertions(SpecReader& r, const YamlNode& section, const Names& names,
                     std::vector<AssertionSpec>& out) {
  load_named(r, section, "assertions", "assertion", out,
             [&](const YamlNode& node, const std::string& path, AssertionSpec& assertion) {
               check_duplicate_keys(r, node, path);
               read_word(r, node, path, "kind", keys::kAssertionKinds, "assertion kind",
                         assertion.kind);
               read_model_list(r, find(node, "models"), join_path(path, "models"), names,
                               assertion.models);
               assertion.body = body_without(node, keys::kAssertion);
               assertion.body_locations.emplace(path, assertion.location);
               record_locations(r, node, path, assertion.body_locations);
             });
}

void load_lexicons(SpecReader& r, const YamlNode& section,
                   std::map<std::string, std::vector<std::string>>& out) {
  if (!r.expect_map(section, "lexicons", "a mapping from lexicon names to lists of words")) return;
  r.check_unique_names(section, "lexicons", "lexicon");
  for (const auto& [key, value] : section.entries) {
    if (!key->is_scalar() || key->value.empty() || out.count(key->value)) continue;
    std::vector<std::string> words;
    const std::string path = join_path("lexicons", key->value);
    if (!r.read_string_list(value.get(), path, words)) continue;
    if (words.empty()) r.error(*value, path, "expected at least one word");
    out[key->value] = std::move(words);
  }
}

}  // namespace scion::spec::detail
