#include "assertions/body_fields.h"

#include <fmt/format.h>

#include <cmath>

#include "spec/spelling.h"

namespace scion::assertions {

std::string json_type_name(const nlohmann::json& value) {
  if (value.is_number()) return "a number";
  if (value.is_string()) return fmt::format("the string '{}'", value.get<std::string>());
  if (value.is_boolean()) return "a boolean";
  if (value.is_array()) return "a list";
  if (value.is_object()) return "a mapping";
  return "null";
}

BodyFields::BodyFields(const nlohmann::json& object, std::string origin, std::string path,
                       const spec::BodyLocations* locations)
    : object_(object), origin_(std::move(origin)), path_(std::move(path)), locations_(locations) {}

std::string BodyFields::location_of(const std::string& path) const {
  if (locations_ == nullptr) return origin_;
  // A key that is absent (a required one) or a list item has no entry: use its parent's.
  std::string at = path;
  while (!at.empty()) {
    if (const auto it = locations_->find(at); it != locations_->end())
      return fmt::format("{}:{}:{}", it->second.file, it->second.line, it->second.column);
    const std::size_t cut = at.find_last_of(".[");
    at.resize(cut == std::string::npos ? 0 : cut);
  }
  return origin_;
}

std::string BodyFields::where(std::string_view key) const {
  const std::string path = key.empty() ? path_ : fmt::format("{}.{}", path_, key);
  return fmt::format("{}: {}", location_of(path), path);
}

Status BodyFields::error(std::string_view key, std::string_view what) const {
  return spec_error(fmt::format("{}: {}", where(key), what));
}

Status BodyFields::check_keys(std::initializer_list<std::string_view> allowed) const {
  if (!object_.is_object())
    return error("", fmt::format("expected a mapping, got {}", json_type_name(object_)));
  for (const auto& [key, value] : object_.items()) {
    bool known = false;
    for (std::string_view a : allowed) known = known || key == a;
    if (!known) {
      const std::vector<std::string_view> words(allowed);
      const std::string hint = spec::did_you_mean(key, words);
      return error(key, hint.empty() ? fmt::format("unknown key; expected one of: {}",
                                                   fmt::join(allowed, ", "))
                                     : fmt::format("unknown key{}", hint));
    }
  }
  return Status::ok();
}

const nlohmann::json* BodyFields::find(std::string_view key) const {
  if (!object_.is_object()) return nullptr;
  auto it = object_.find(std::string(key));
  return it == object_.end() ? nullptr : &*it;
}

bool BodyFields::has(std::string_view key) const { return find(key) != nullptr; }

Result<std::string> BodyFields::string(std::string_view key,
                                       std::optional<std::string> fallback) const {
  const nlohmann::json* value = find(key);
  if (value == nullptr) {
    if (fallback) return *fallback;
    return error(key, "is required");
  }
  if (!value->is_string())
    return error(key, fmt::format("expected a string, got {}", json_type_name(*value)));
  return value->get<std::string>();
}

Result<std::string> BodyFields::choice(std::string_view key,
                                       std::initializer_list<std::string_view> choices,
                                       std::optional<std::string> fallback) const {
  auto value = string(key, std::move(fallback));
  if (!value.is_ok()) return value;
  for (std::string_view c : choices)
    if (*value == c) return value;
  const std::vector<std::string_view> words(choices);
  return error(key, fmt::format("expected one of {}; got '{}'{}", fmt::join(choices, ", "), *value,
                                spec::did_you_mean(*value, words)));
}

Result<double> BodyFields::number(std::string_view key, std::optional<double> fallback) const {
  const nlohmann::json* value = find(key);
  if (value == nullptr) {
    if (fallback) return *fallback;
    return error(key, "is required");
  }
  if (!value->is_number())
    return error(key, fmt::format("expected a number, got {}", json_type_name(*value)));
  return value->get<double>();
}

Result<std::int64_t> BodyFields::integer(std::string_view key, std::int64_t min, std::int64_t max,
                                         std::optional<std::int64_t> fallback) const {
  const nlohmann::json* value = find(key);
  if (value == nullptr) {
    if (fallback) return *fallback;
    return error(key, "is required");
  }
  const bool integral =
      value->is_number_integer() ||
      (value->is_number_float() && std::floor(value->get<double>()) == value->get<double>());
  if (!integral)
    return error(key, fmt::format("expected a whole number, got {}", json_type_name(*value)));
  const double v = value->get<double>();
  if (v < static_cast<double>(min) || v > static_cast<double>(max))
    return error(key, fmt::format("{} is out of range; use {} to {}", v, min, max));
  return static_cast<std::int64_t>(v);
}

Result<bool> BodyFields::boolean(std::string_view key, bool fallback) const {
  const nlohmann::json* value = find(key);
  if (value == nullptr) return fallback;
  if (!value->is_boolean())
    return error(key, fmt::format("expected true or false, got {}", json_type_name(*value)));
  return value->get<bool>();
}

Result<std::vector<std::string>> BodyFields::strings(std::string_view key) const {
  const nlohmann::json* value = find(key);
  std::vector<std::string> out;
  if (value == nullptr) return out;
  if (value->is_string()) return std::vector<std::string>{value->get<std::string>()};
  if (!value->is_array())
    return error(key, fmt::format("expected a list of strings, got {}", json_type_name(*value)));
  for (std::size_t i = 0; i < value->size(); ++i) {
    if (!(*value)[i].is_string())
      return error(fmt::format("{}[{}]", key, i),
                   fmt::format("expected a string, got {}", json_type_name((*value)[i])));
    out.push_back((*value)[i].get<std::string>());
  }
  return out;
}

BodyFields BodyFields::nested(std::string_view key) const {
  static const nlohmann::json kNull;
  const nlohmann::json* value = find(key);
  return BodyFields(value ? *value : kNull, origin_, fmt::format("{}.{}", path_, key), locations_);
}

}  // namespace scion::assertions
