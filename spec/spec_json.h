// The one JSON form of a model's architecture and adaptation, in two modes.
//
// Canonical: what recipe hashes are computed over (spec/recipe_hash.h): enums as their
// declaration index, keys that came later only when set, so every hash stays what it was
// (tests/unit/recipe_hash_golden_test checks the examples' hashes byte for byte).
// Words: the same document with every enum as the word scion.yaml uses for it
// (spec/vocabulary.h), floats as written and the seed as a number; it is what the lineage
// store's model records hold and what `lineage show`, `lineage diff`, the report and
// MLflow exports print. There is no third form: a record and a recipe differ only in
// how they name values, never in keys.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string_view>

#include "spec/workspace.h"

namespace scion::spec {

// Canonical mode.
nlohmann::json architecture_json(const Architecture& architecture);
nlohmann::json adaptation_json(const Adaptation& adaptation);

// The adaptation a canonical "adapt" section describes (the inverse of adaptation_json),
// for running an older version of a model whose spec has moved on. nullopt when `adapt`
// is not such a section.
std::optional<Adaptation> adaptation_from_recipe(const nlohmann::json& adapt);

// Words mode of a canonical document whose root sits at `path` in a canonical recipe
// ("" for a whole recipe, "adapt" for an adaptation, "architecture" for an architecture).
nlohmann::json in_spec_words(const nlohmann::json& canonical, std::string_view path = "");

inline nlohmann::json architecture_in_words(const Architecture& architecture) {
  return in_spec_words(architecture_json(architecture), "architecture");
}
inline nlohmann::json adaptation_in_words(const Adaptation& adaptation) {
  return in_spec_words(adaptation_json(adaptation), "adapt");
}

}  // namespace scion::spec
