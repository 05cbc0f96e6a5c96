#include "base/json_value.h"

#include <cctype>
#include <cmath>
#include <limits>

#include "base/json_number_range.h"

namespace scion {
namespace {

using nlohmann::json;

// Keys that read well after a dot; any other is written as ["key"].
bool is_plain_key(std::string_view key) {
  if (key.empty()) return false;
  for (char c : key)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-')) return false;
  return true;
}

std::string joined_path(const std::string& path, std::string_view key) {
  if (is_plain_key(key)) return path.empty() ? std::string(key) : path + "." + std::string(key);
  return path + "[" + JsonValue::shown(json(std::string(key)), 40) + "]";
}

// `text` cut to at most `max_bytes`, never inside a UTF-8 character.
std::string cut_at_character(std::string text, std::size_t max_bytes) {
  if (text.size() <= max_bytes) return text;
  std::size_t end = max_bytes;
  while (end > 0 && (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80) --end;
  text.resize(end);
  return text + "...";
}

}  // namespace

JsonValue::JsonValue(const json& value, std::string_view file, std::string path)
    : value_(&value), file_(file), path_(std::move(path)) {}

std::string JsonValue::where() const {
  return path_.empty() ? std::string(file_) : std::string(file_) + ": " + path_;
}

std::string JsonValue::shown(const json& value, std::size_t max_bytes) {
  // replace: a string holding invalid UTF-8 (possible in values built from bytes) prints
  // U+FFFD instead of throwing.
  return cut_at_character(value.dump(-1, ' ', false, json::error_handler_t::replace), max_bytes);
}

const char* JsonValue::type_phrase(const json& value) {
  switch (value.type()) {
    case json::value_t::null:
      return "null";
    case json::value_t::object:
      return "an object";
    case json::value_t::array:
      return "an array";
    case json::value_t::string:
      return "a string";
    case json::value_t::boolean:
      return "a boolean";
    case json::value_t::number_integer:
    case json::value_t::number_unsigned:
      return "an integer";
    case json::value_t::number_float:
      return "a number";
    case json::value_t::binary:
      return "binary data";
    case json::value_t::discarded:
      return "invalid JSON";
  }
  return "an unknown value";
}

Status JsonValue::wrong_type(std::string_view expected) const {
  const std::string found =
      value_->is_null() ? std::string("null") : shown(*value_) + " (" + type_phrase(*value_) + ")";
  return spec_error(where() + " is " + found + ", expected " + std::string(expected));
}

Status JsonValue::error(std::string_view message) const {
  return spec_error(where() + ": " + std::string(message));
}

Result<std::string> JsonValue::as_string() const {
  if (!value_->is_string()) return wrong_type("a string");
  return value_->get_ref<const std::string&>();
}

Result<bool> JsonValue::as_bool() const {
  if (!value_->is_boolean()) return wrong_type("true or false");
  return value_->get<bool>();
}

Result<std::int64_t> JsonValue::as_integer(std::int64_t min, std::int64_t max) const {
  const std::string expected =
      "an integer from " + std::to_string(min) + " to " + std::to_string(max);
  if (value_->is_number_unsigned()) {
    const std::uint64_t v = value_->get<std::uint64_t>();
    if (max < 0 || v > static_cast<std::uint64_t>(max) ||
        (min > 0 && v < static_cast<std::uint64_t>(min)))
      return wrong_type(expected);
    return static_cast<std::int64_t>(v);
  }
  if (value_->is_number_integer()) {
    const std::int64_t v = value_->get<std::int64_t>();
    if (v < min || v > max) return wrong_type(expected);
    return v;
  }
  return wrong_type(expected);
}

Result<double> JsonValue::as_number() const {
  if (!value_->is_number() || !std::isfinite(value_->get<double>())) return wrong_type("a number");
  return value_->get<double>();
}

Status JsonValue::expect_object() const {
  return value_->is_object() ? Status::ok() : wrong_type("an object");
}

Status JsonValue::expect_array() const {
  return value_->is_array() ? Status::ok() : wrong_type("an array");
}

JsonValue JsonValue::nested(const json& value, std::string_view key) const {
  return JsonValue(value, file_, joined_path(path_, key));
}

JsonValue JsonValue::nested(const json& value, std::size_t index) const {
  return JsonValue(value, file_, path_ + "[" + std::to_string(index) + "]");
}

std::string JsonValue::key_path(std::string_view key) const { return joined_path(path_, key); }

bool JsonValue::has(std::string_view key) const { return member(key).has_value(); }

std::optional<JsonValue> JsonValue::member(std::string_view key) const {
  if (!value_->is_object()) return std::nullopt;
  const auto it = value_->find(key);
  if (it == value_->end() || it->is_null()) return std::nullopt;
  return nested(*it, key);
}

Result<JsonValue> JsonValue::required(std::string_view key) const {
  SCION_RETURN_IF_ERROR(expect_object());
  auto m = member(key);
  if (!m) return spec_error(std::string(file_) + ": " + joined_path(path_, key) + " is missing");
  return *m;
}

Result<std::string> JsonValue::required_string(std::string_view key) const {
  auto m = required(key);
  if (!m) return m.status();
  return m->as_string();
}

Result<std::string> JsonValue::string_or(std::string_view key, std::string fallback) const {
  SCION_RETURN_IF_ERROR(expect_object());
  auto m = member(key);
  if (!m) return fallback;
  return m->as_string();
}

Result<bool> JsonValue::bool_or(std::string_view key, bool fallback) const {
  SCION_RETURN_IF_ERROR(expect_object());
  auto m = member(key);
  if (!m) return fallback;
  return m->as_bool();
}

Result<std::int64_t> JsonValue::integer_or(std::string_view key, std::int64_t fallback,
                                           std::int64_t min, std::int64_t max) const {
  SCION_RETURN_IF_ERROR(expect_object());
  auto m = member(key);
  if (!m) return fallback;
  return m->as_integer(min, max);
}

Result<double> JsonValue::number_or(std::string_view key, double fallback) const {
  SCION_RETURN_IF_ERROR(expect_object());
  auto m = member(key);
  if (!m) return fallback;
  return m->as_number();
}

Result<std::optional<JsonValue>> JsonValue::object_or_null(std::string_view key) const {
  SCION_RETURN_IF_ERROR(expect_object());
  auto m = member(key);
  if (!m) return std::optional<JsonValue>();
  SCION_RETURN_IF_ERROR(m->expect_object());
  return m;
}

Result<std::optional<JsonValue>> JsonValue::array_or_null(std::string_view key) const {
  SCION_RETURN_IF_ERROR(expect_object());
  auto m = member(key);
  if (!m) return std::optional<JsonValue>();
  SCION_RETURN_IF_ERROR(m->expect_array());
  return m;
}

std::vector<JsonValue> JsonValue::elements() const {
  std::vector<JsonValue> out;
  if (!value_->is_array()) return out;
  out.reserve(value_->size());
  for (std::size_t i = 0; i < value_->size(); ++i) out.push_back(nested((*value_)[i], i));
  return out;
}

std::vector<std::pair<std::string, JsonValue>> JsonValue::members() const {
  std::vector<std::pair<std::string, JsonValue>> out;
  if (!value_->is_object()) return out;
  out.reserve(value_->size());
  for (auto it = value_->begin(); it != value_->end(); ++it)
    out.emplace_back(it.key(), nested(it.value(), it.key()));
  return out;
}

Result<json> parse_json_document(std::string_view text, std::string_view file) {
  try {
    return json::parse(text.begin(), text.end());
  } catch (const json::parse_error& e) {
    return spec_error(std::string(file) + ": not valid JSON (at byte " + std::to_string(e.byte) +
                      ")");
  } catch (const json::out_of_range& e) {
    // A number beyond a 64-bit float: say which and where, not nlohmann's words.
    if (const auto number = find_out_of_range_number(text))
      return spec_error(describe_out_of_range_number(file, *number));
    return spec_error(std::string(file) + ": not valid JSON (" + e.what() + ")");
  } catch (const json::exception& e) {
    return spec_error(std::string(file) + ": not valid JSON (" + e.what() + ")");
  }
}

std::string a_json_type(const nlohmann::json& value) {
  if (value.is_null()) return "null";
  const std::string type = value.type_name();
  const bool vowel = type.find_first_of("aeiou") == 0;
  return (vowel ? "an " : "a ") + type;
}

}  // namespace scion
