// BodyFields: typed reading of a spec `body:` object (JSON from YAML) with error messages
// that name the place: "<file>:<line>:<col>: tests.negation.perturb.mode: expected one of
// add, remove, any; got 'ad'".
//
// The loader checks only that bodies are objects; every key's type and meaning is
// checked here, where it is defined. A BodyFields refers to its JSON; keep the JSON alive.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "spec/workspace.h"

namespace scion::assertions {

class BodyFields {
 public:
  // `origin`: the file:line:col of the owning test or assertion; `path`: the key path of
  // `object` in the spec ("tests.negation", "tests.negation.perturb"). With `locations`
  // (the spec's, kept alive by the caller), an error names the file:line:col of its key,
  // or of the nearest enclosing key that has one, instead of `origin`.
  BodyFields(const nlohmann::json& object, std::string origin, std::string path,
             const spec::BodyLocations* locations = nullptr);

  // Fails unless the JSON is an object whose keys are all in `allowed`.
  Status check_keys(std::initializer_list<std::string_view> allowed) const;

  bool has(std::string_view key) const;
  const nlohmann::json* find(std::string_view key) const;

  // Each getter returns `fallback` when the key is absent; without a fallback the key is
  // required.
  Result<std::string> string(std::string_view key,
                             std::optional<std::string> fallback = std::nullopt) const;
  Result<std::string> choice(std::string_view key, std::initializer_list<std::string_view> choices,
                             std::optional<std::string> fallback = std::nullopt) const;
  Result<double> number(std::string_view key, std::optional<double> fallback = std::nullopt) const;
  Result<std::int64_t> integer(std::string_view key, std::int64_t min, std::int64_t max,
                               std::optional<std::int64_t> fallback = std::nullopt) const;
  Result<bool> boolean(std::string_view key, bool fallback) const;
  // A list of strings; a single string is a list of one. Absent: empty.
  Result<std::vector<std::string>> strings(std::string_view key) const;

  // A nested object's fields, with the path extended by `key`.
  BodyFields nested(std::string_view key) const;

  const std::string& origin() const { return origin_; }
  const std::string& path() const { return path_; }
  const spec::BodyLocations* locations() const { return locations_; }

  // An error at `key` (or at the object itself when `key` is empty).
  Status error(std::string_view key, std::string_view what) const;
  std::string where(std::string_view key) const;

 private:
  // The file:line:col of key path `path` (see the constructor).
  std::string location_of(const std::string& path) const;

  const nlohmann::json& object_;
  std::string origin_;
  std::string path_;
  const spec::BodyLocations* locations_;
};

// "string", "number", ... for error messages.
std::string json_type_name(const nlohmann::json& value);

}  // namespace scion::assertions
