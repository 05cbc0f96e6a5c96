// JsonValue: typed, non-throwing reads of JSON that scion did not write (a Hugging Face
// config.json, tokenizer.json, tokenizer_config.json, model.safetensors.index.json, a PEFT
// adapter_config.json).
//
// nlohmann::json's own accessors (value(), get<>(), operator[]) throw when a value has
// another type than asked for, and its messages name neither the file nor the key; a
// wrong type in a downloaded file must be a spec error like any other (exit 2). A
// JsonValue is a view of one value of a parsed document with where it is: the file and
// the key path ("model.vocab", "added_tokens[3].content"). Every read checks the type
// and returns a Result whose error is a kSpecError of one line:
//   "tokenizer.json: added_tokens[0].content is 5 (a number), expected a string"
// Optional members read as their fallback when absent or null (Hugging Face files write
// null for "the default"). The loaders read JSON only through this class.
//
// A JsonValue borrows the document and the file name: both must outlive it. Copies are
// cheap except for the key path. Thread-compatible.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace scion {

class JsonValue {
 public:
  // `file` names the document in messages; `path` is the key path of `value` in it
  // (empty for the document itself).
  JsonValue(const nlohmann::json& value, std::string_view file, std::string path = "");

  const nlohmann::json& raw() const { return *value_; }
  std::string_view file() const { return file_; }
  const std::string& path() const { return path_; }
  // "tokenizer.json: model.vocab" (or only the file for the document itself).
  std::string where() const;
  // The key path of this object's member `key` ("model.type"), there or not.
  std::string key_path(std::string_view key) const;

  bool is_null() const { return value_->is_null(); }
  bool is_object() const { return value_->is_object(); }
  bool is_array() const { return value_->is_array(); }
  bool is_string() const { return value_->is_string(); }

  // An error at this value: "<where> is <value> (<its type>), expected <expected>".
  Status wrong_type(std::string_view expected) const;
  // An error at this value with the caller's words: "<where>: <message>".
  Status error(std::string_view message) const;

  // This value as a type. Errors: wrong_type.
  Result<std::string> as_string() const;
  Result<bool> as_bool() const;
  // An integer in [min, max]; a float, or an integer out of range, is an error.
  Result<std::int64_t> as_integer(std::int64_t min, std::int64_t max) const;
  Result<double> as_number() const;  // any JSON number, finite
  Status expect_object() const;
  Status expect_array() const;

  // Members of an object (REQUIRES: is_object(), checked by expect_object or object()).
  // Absent and null members are "not there": has() is false, member() is nullopt.
  bool has(std::string_view key) const;
  std::optional<JsonValue> member(std::string_view key) const;
  // Members that must be there. Errors: "<where>.<key> is missing" or wrong_type.
  Result<JsonValue> required(std::string_view key) const;
  Result<std::string> required_string(std::string_view key) const;
  // Optional members: the fallback when absent or null, else the typed value.
  Result<std::string> string_or(std::string_view key, std::string fallback) const;
  Result<bool> bool_or(std::string_view key, bool fallback) const;
  Result<std::int64_t> integer_or(std::string_view key, std::int64_t fallback, std::int64_t min,
                                  std::int64_t max) const;
  Result<double> number_or(std::string_view key, double fallback) const;
  // An optional member that must be an object (or an array): nullopt when absent or null.
  Result<std::optional<JsonValue>> object_or_null(std::string_view key) const;
  Result<std::optional<JsonValue>> array_or_null(std::string_view key) const;

  // The elements of an array, or the members of an object with their keys
  // (REQUIRES: the matching is_array() / is_object()).
  std::vector<JsonValue> elements() const;
  std::vector<std::pair<std::string, JsonValue>> members() const;

  // A value for messages: compact JSON, at most `max_bytes` (cut at a UTF-8 boundary, "..."
  // added), never throwing on any string.
  static std::string shown(const nlohmann::json& value, std::size_t max_bytes = 60);
  // "a number", "a string", "an object", ... for messages.
  static const char* type_phrase(const nlohmann::json& value);

  // `value`, a member of this object under `key` (or element `index` of this array), with
  // its key path: for loops over large objects that build a JsonValue only for a message.
  JsonValue nested(const nlohmann::json& value, std::string_view key) const;
  JsonValue nested(const nlohmann::json& value, std::size_t index) const;

 private:
  const nlohmann::json* value_;
  std::string_view file_;
  std::string path_;
};

// Parses `text` as one JSON value named `file` in messages; a syntax error is a spec error
// with the byte offset. The document must outlive every JsonValue read from it.
Result<nlohmann::json> parse_json_document(std::string_view text, std::string_view file);

// The type of `value` with its article, for messages: "an array", "a string", "null".
std::string a_json_type(const nlohmann::json& value);

}  // namespace scion
