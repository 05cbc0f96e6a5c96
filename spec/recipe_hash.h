// Recipe hashes: what identifies a model's training, independent of how the YAML is
// written.
//
// A model's recipe is the canonical JSON (keys sorted, no whitespace, typed values) of
// every field that changes the parameters it produces: its own name (parameter names
// embed it), architecture or imported checkpoint digest, adaptation, freeze/unfreeze,
// training recipe with its seed, the content digest and reading settings (format,
// fields, labels) of its training data, the shares it takes part in, its parent's
// recipe hash, and the recipes of the models it trains with through shares (its training
// unit, Workspace::training_unit), whose training changes its shared modules. The hash is the lowercase hex SHA-256 of that text. Names of datasets,
// data file paths and unrelated models are not part of it, so renaming or moving them
// keeps every hash; any training-relevant change changes it and every descendant's.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "spec/spec_json.h"  // adaptation_from_recipe, the canonical forms
#include "spec/workspace.h"

namespace scion::spec {

// REQUIRES: the parents of `model` and of every model of its training unit already have
// their recipe_hash, and the workspace passed validation.
nlohmann::json canonical_recipe(const Workspace& workspace, const Model& model);
std::string recipe_hash(const Workspace& workspace, const Model& model);

// The canonical digest of the whole workspace: the SHA-256 of canonical JSON holding every
// model's recipe hash, every dataset's digest and reading settings, the shares, the tests,
// assertions and lexicons. Independent of how the YAML is written and where files are, like
// the recipe hashes: two processes that loaded the same spec and data agree on it.
// REQUIRES: set_recipe_hashes has run.
std::string workspace_digest(const Workspace& workspace);

// Sets every model's recipe_hash, each after the parents of its training unit.
// REQUIRES: the workspace passed validation (no cycle through `from` and `share`).
void set_recipe_hashes(Workspace& workspace);

}  // namespace scion::spec
