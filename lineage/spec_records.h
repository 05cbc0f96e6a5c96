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

// A short label of a model's method for tree views: "lora r=8", "head+bitfit", "base".
std::string method_label(const nlohmann::json& adaptation);

}  // namespace scion::lineage
