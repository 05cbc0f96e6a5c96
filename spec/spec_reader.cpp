#include "spec/spec_reader.h"

#include <fmt/format.h>

#include <charconv>
#include <cmath>
#include <limits>
#include <optional>
#include <set>

#include "spec/foreign_vocabulary.h"
#include "spec/names.h"

namespace scion::spec {
namespace {

std::optional<std::int64_t> parse_integer(std::string_view text) {
  if (!text.empty() && text.front() == '+') text.remove_prefix(1);
  std::int64_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || text.empty()) return std::nullopt;
  return value;
}

std::optional<double> parse_number(std::string_view text) {
  if (!text.empty() && text.front() == '+') text.remove_prefix(1);
  double value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || text.empty() ||
      !std::isfinite(value))
    return std::nullopt;
  return value;
}

// For a value written in quotes that would have been valid without them: the remedy, since
// a quoted value is always a string ("8" is text, 8 a number). "" otherwise.
std::string quoted_value_hint(const YamlNode& node, bool valid_unquoted) {
  if (!node.is_scalar() || !node.quoted || !valid_unquoted) return "";
  return fmt::format("; the value is a quoted string; write {} without quotes", node.value);
}

// Why `value` cannot be used as a float32, which is what training computes in: it
// overflows to infinity, or it is not 0 but becomes 0 or a subnormal (a class weight of
// 1e-46 is a weight of 0, and 1e-45 keeps one bit of precision). "" when it can.
std::string float32_loss(double value) {
  const float converted = static_cast<float>(value);
  if (!std::isfinite(converted))
    return fmt::format("beyond float32, whose largest value is {:.4g}; use a smaller number",
                       std::numeric_limits<float>::max());
  if (value != 0 && !std::isnormal(converted))
    return fmt::format(
        "below float32's smallest normal value {:.4g}, so training would see {}; use a "
        "number of at least that size",
        std::numeric_limits<float>::min(), converted == 0 ? "0" : "a value with almost no precision");
  return "";
}

}  // namespace

std::string join_path(const std::string& path, std::string_view key) {
  if (path.empty()) return std::string(key);
  return path + "." + std::string(key);
}

std::string index_path(const std::string& path, std::size_t index) {
  return fmt::format("{}[{}]", path, index);
}

std::string join_words(std::span<const std::string_view> words) {
  std::string out;
  for (std::string_view w : words) {
    if (!out.empty()) out += ", ";
    out += w;
  }
  return out;
}

const YamlNode* find(const YamlNode& map, std::string_view key) {
  for (const auto& [k, v] : map.entries)
    if (k->is_scalar() && k->value == key) return v.get();
  return nullptr;
}

void SpecReader::error(const YamlNode& at, const std::string& path, const std::string& what,
                       const std::string& hint) {
  std::string message = what;
  if (!path.empty()) message += " at " + path;
  message += hint;
  errors_.push_back({location(at), path, std::move(message)});
}

void SpecReader::warn(const YamlNode& at, const std::string& path, const std::string& what,
                      const std::string& hint) {
  std::string message = what;
  if (!path.empty()) message += " at " + path;
  message += hint;
  warnings_.push_back({location(at), path, std::move(message)});
}

void SpecReader::append_to_error(std::size_t index, const std::string& text) {
  if (index < errors_.size()) errors_[index].message += text;
}

bool SpecReader::expect_map(const YamlNode& node, const std::string& path, std::string_view what) {
  if (node.is_map()) return true;
  error(node, path, fmt::format("expected {}, got {}", what, describe(node)));
  return false;
}

void SpecReader::report_unknown(const YamlNode& node, const std::string& path,
                                std::string_view word, std::span<const std::string_view> known,
                                std::string_view what) {
  std::string hint = did_you_mean(word, known);
  if (hint.empty()) hint = " (expected one of: " + join_words(known) + ")";
  error(node, path, fmt::format("unknown {} '{}'", what, shorten(word)), hint);
}

void SpecReader::check_keys(const YamlNode& map, const std::string& path,
                            std::span<const std::string_view> allowed, std::string_view key_kind) {
  std::set<std::string> seen;
  for (const auto& [key, value] : map.entries) {
    if (!key->is_scalar()) {
      error(*key, path, fmt::format("expected a {} name, got {}", key_kind, describe(*key)));
      continue;
    }
    const std::string key_path = join_path(path, key->value);
    if (!seen.insert(key->value).second) {
      error(*key, key_path, fmt::format("duplicate {} '{}'", key_kind, key->value),
            "; each key may appear once");
      continue;
    }
    bool known = false;
    for (std::string_view a : allowed) known = known || a == key->value;
    if (known) continue;
    if (std::string hint = foreign_key_hint(key->value, *value, allowed); !hint.empty())
      error(*key, key_path, fmt::format("unknown {} '{}'", key_kind, shorten(key->value)), hint);
    else
      report_unknown(*key, key_path, key->value, allowed, key_kind);
  }
}

void SpecReader::check_unique_names(const YamlNode& map, const std::string& path,
                                    std::string_view kind) {
  std::set<std::string> seen;
  for (const auto& [key, value] : map.entries) {
    if (!key->is_scalar() || key->value.empty()) {
      error(*key, path, fmt::format("expected a {} name, got {}", kind, describe(*key)));
      continue;
    }
    if (const std::string problem = name_problem(key->value); !problem.empty()) {
      const std::string like = safe_name_like(key->value);
      error(*key, path, fmt::format("{} name '{}' {}", kind, shorten(key->value), problem),
            fmt::format("; {}{}", kNameRule,
                        like.empty() ? "" : fmt::format(" \u2014 rename it, e.g. '{}'", like)));
    }
    if (!seen.insert(key->value).second)
      error(*key, join_path(path, key->value),
            fmt::format("duplicate {} name '{}'", kind, key->value), "; names must be unique");
  }
}

const YamlNode* SpecReader::require(const YamlNode& map, const std::string& path,
                                    std::string_view key, std::string_view expected) {
  const YamlNode* node = find(map, key);
  if (node == nullptr)
    error(map, path, fmt::format("missing required key '{}' ({})", key, expected));
  return node;
}

bool SpecReader::read_string(const YamlNode* node, const std::string& path, std::string& out) {
  if (node == nullptr) return true;
  if (!node->is_scalar()) {
    error(*node, path, fmt::format("expected a string, got {}", describe(*node)));
    return false;
  }
  out = node->value;
  return true;
}

bool SpecReader::read_bool(const YamlNode* node, const std::string& path, bool& out) {
  if (node == nullptr) return true;
  const std::string& v = node->value;
  const bool is_true = v == "true" || v == "True" || v == "TRUE";
  const bool is_false = v == "false" || v == "False" || v == "FALSE";
  if (node->is_scalar() && !node->quoted && (is_true || is_false)) return out = is_true, true;
  error(*node, path, fmt::format("expected true or false, got {}", describe(*node)),
        quoted_value_hint(*node, is_true || is_false));
  return false;
}

bool SpecReader::read_int(const YamlNode* node, const std::string& path, int& out, std::int64_t min,
                          std::int64_t max, const std::string& expected) {
  if (node == nullptr) return true;
  const auto value = node->is_scalar() && !node->quoted ? parse_integer(node->value) : std::nullopt;
  if (!value || *value < min || *value > max) {
    const auto unquoted = parse_integer(node->value);
    // A whole number too large for the key (or for 64 bits): say how large it may be,
    // unless `expected` already does ("a positive integer" alone would read as wrong).
    const std::string& text = node->value;
    const bool digits = !text.empty() && text.find_first_not_of("0123456789") == std::string::npos;
    const bool too_large = digits && (!unquoted || *unquoted > max);
    const std::string bound = too_large && expected.find(std::to_string(max)) == std::string::npos
                                  ? fmt::format(" (at most {})", max)
                                  : std::string();
    error(*node, path, fmt::format("expected {}{}, got {}", expected, bound, describe(*node)),
          quoted_value_hint(*node, unquoted && *unquoted >= min && *unquoted <= max));
    return false;
  }
  out = static_cast<int>(*value);
  return true;
}

bool SpecReader::read_uint64(const YamlNode* node, const std::string& path, std::uint64_t& out) {
  if (node == nullptr) return true;
  std::uint64_t value = 0;
  const std::string& text = node->value;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  const bool parses = !text.empty() && ec == std::errc() && end == text.data() + text.size();
  if (!node->is_scalar() || node->quoted || !parses) {
    error(*node, path,
          fmt::format("expected a non-negative integer below 2^64, got {}", describe(*node)),
          quoted_value_hint(*node, parses));
    return false;
  }
  out = value;
  return true;
}

bool SpecReader::read_float(const YamlNode* node, const std::string& path, float& out, double min,
                            bool min_exclusive, double max, bool max_exclusive,
                            const std::string& expected) {
  if (node == nullptr) return true;
  const auto in_range = [&](std::optional<double> v) {
    return v && (min_exclusive ? *v > min : *v >= min) && (max_exclusive ? *v < max : *v <= max);
  };
  const auto value = node->is_scalar() && !node->quoted ? parse_number(node->value) : std::nullopt;
  if (!in_range(value)) {
    error(*node, path, fmt::format("expected {}, got {}", expected, describe(*node)),
          quoted_value_hint(*node, in_range(parse_number(node->value))));
    return false;
  }
  const std::string lost = float32_loss(*value);
  if (!lost.empty()) {
    error(*node, path, fmt::format("expected {}, got {}: {}", expected, describe(*node), lost));
    return false;
  }
  out = static_cast<float>(*value);
  return true;
}

bool SpecReader::read_string_list(const YamlNode* node, const std::string& path,
                                  std::vector<std::string>& out) {
  if (node == nullptr) return true;
  if (!node->is_sequence()) {
    error(*node, path, fmt::format("expected a list of strings, got {}", describe(*node)));
    return false;
  }
  std::vector<std::string> values;
  bool ok = true;
  for (std::size_t i = 0; i < node->items.size(); ++i) {
    std::string value;
    ok = read_string(node->items[i].get(), index_path(path, i), value) && ok;
    values.push_back(std::move(value));
  }
  if (ok) out = std::move(values);
  return ok;
}

bool SpecReader::read_int_list(const YamlNode* node, const std::string& path, std::vector<int>& out,
                               std::int64_t min, std::int64_t max, const std::string& expected) {
  if (node == nullptr) return true;
  if (!node->is_sequence()) {
    error(*node, path, fmt::format("expected a list of integers, got {}", describe(*node)));
    return false;
  }
  std::vector<int> values;
  std::set<int> seen;
  bool ok = true;
  for (std::size_t i = 0; i < node->items.size(); ++i) {
    int value = 0;
    const std::string item_path = index_path(path, i);
    if (!read_int(node->items[i].get(), item_path, value, min, max, expected)) {
      ok = false;
      continue;
    }
    if (!seen.insert(value).second) {
      error(*node->items[i], item_path, fmt::format("{} is listed twice", value));
      ok = false;
    }
    values.push_back(value);
  }
  if (ok) out = std::move(values);
  return ok;
}

}  // namespace scion::spec
