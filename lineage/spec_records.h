// How a spec model is described in the store: its adaptation method(s) and the base's
// architecture as JSON, plus its name, parent and recipe hash. The runtime calls
// model_record_for() when it starts a run or commits parameters, so every writer
// records the same fields.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "lineage/records.h"
#include "spec/workspace.h"

namespace scion::lineage {

// {"lora": {"rank": 8, ...}, "head": {...}}; {} for a base.
nlohmann::json adaptation_json(const spec::Adaptation& adaptation);
nlohmann::json architecture_json(const spec::Architecture& architecture);

// REQUIRES: model belongs to workspace.
ModelRecord model_record_for(const spec::Workspace& workspace, const spec::Model& model);

// A recorded recipe (spec::canonical_recipe, as runs store it) in the spec's own words
// and values: enums by their YAML words (`objective: mlm`, `type: adamw`) instead of the
// canonical numbers, floats as written (0.9, not 0.8999999761581421), the seed as a
// number. Fields it does not know pass through unchanged, so any record reads.
nlohmann::json recipe_in_spec_words(const nlohmann::json& canonical);

// A short label of a model's method for tree views: "lora r=8", "head+bitfit", "base".
std::string method_label(const nlohmann::json& adaptation);

}  // namespace scion::lineage
