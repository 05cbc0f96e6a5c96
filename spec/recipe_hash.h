// Recipe hashes: what identifies a model's training, independent of how the YAML is
// written.
//
// A model's recipe is the canonical JSON (keys sorted, no whitespace, typed values) of
// every field that changes the parameters it produces: its own name (parameter names
// embed it), architecture or imported checkpoint digest, adaptation, freeze/unfreeze,
// training recipe with its seed, the content digest and reading settings (format,
// fields, labels) of its training data, the shares it takes part in, and its parent's
// recipe hash. The hash is the lowercase hex SHA-256 of that text. Names of datasets,
// data file paths and unrelated models are not part of it, so renaming or moving them
// keeps every hash; any training-relevant change changes it and every descendant's.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "spec/workspace.h"

namespace scion::spec {

// REQUIRES: every model before `model` in workspace.models already has its recipe_hash
// (parents come first), and the workspace passed validation.
nlohmann::json canonical_recipe(const Workspace& workspace, const Model& model);
std::string recipe_hash(const Workspace& workspace, const Model& model);

}  // namespace scion::spec
