// What the readers of a Hugging Face tokenizer.json share (wordpiece_hugging_face.cpp,
// bpe_hugging_face.cpp): opening and parsing the file, and naming a component's type.
// Both read the document only through base/json_value.h, so a value of the wrong JSON
// type is a spec error naming its key path, never an exception.
#pragma once

#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "base/json_value.h"
#include "base/regular_file.h"
#include "base/status.h"

namespace scion::text {

// The text of a tokenizer file. Errors: kNotFound when it cannot be opened.
inline Result<std::string> read_tokenizer_text(const std::filesystem::path& path) {
  if (Status regular = check_regular_file(path, FollowLinks::kYes);
      !regular && regular.code() != StatusCode::kNotFound)
    return regular;
  std::ifstream in(path, std::ios::binary);
  if (!in) return not_found(fmt::format("{}: cannot open the tokenizer file", path.string()));
  return std::string{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// A tokenizer.json's top-level object. Errors: a spec error when it is not a JSON object.
inline Result<nlohmann::json> parse_tokenizer_json(std::string_view text, const std::string& file) {
  auto root = parse_json_document(text, file);
  if (!root || !root->is_object())
    return spec_error(fmt::format("{}: not a JSON object; save it with tokenizer.save()", file));
  return root;
}

// A component's "type" ("BPE", "BertNormalizer", ...): "null" for an absent or null
// component. Errors: a component that is not an object, or whose type is not a string.
inline Result<std::string> component_type(const std::optional<JsonValue>& node) {
  if (!node) return std::string("null");
  SCION_RETURN_IF_ERROR(node->expect_object());
  return node->string_or("type", "(no type)");
}

}  // namespace scion::text
