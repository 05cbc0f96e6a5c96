// What the readers of a Hugging Face tokenizer.json share (wordpiece_hugging_face.cpp,
// bpe_hugging_face.cpp): opening and parsing the file, and naming a component's type.
#pragma once

#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "base/status.h"

namespace scion::text {

// The file's top-level object. Errors: kNotFound when it cannot be opened; a spec error
// when it is not a JSON object.
inline Result<nlohmann::json> read_tokenizer_json(const std::filesystem::path& tokenizer_json) {
  const std::string file = tokenizer_json.string();
  std::ifstream in(tokenizer_json, std::ios::binary);
  if (!in) return not_found(fmt::format("{}: cannot open the tokenizer file", file));
  nlohmann::json root = nlohmann::json::parse(in, nullptr, false);
  if (root.is_discarded() || !root.is_object())
    return spec_error(fmt::format("{}: not a JSON object; save it with tokenizer.save()", file));
  return root;
}

// A component's "type" ("BPE", "BertNormalizer", ...), or what stands there instead, for
// checks and error messages.
inline std::string component_type(const nlohmann::json& node) {
  if (!node.is_object()) return node.is_null() ? "null" : node.dump();
  return node.value("type", std::string("(no type)"));
}

}  // namespace scion::text
