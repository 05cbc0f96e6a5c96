// How a spec model is described in the store: its adaptation method(s) and the base's
// architecture in the spec's words (spec/spec_json.h, words mode), plus its name, parent
// and recipe hash. The runtime calls model_record_for() when it starts a run or commits
// parameters, so every writer records the same fields.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "lineage/records.h"
#include "spec/workspace.h"

namespace scion::lineage {

// REQUIRES: model belongs to workspace.
ModelRecord model_record_for(const spec::Workspace& workspace, const spec::Model& model);

// A short label of a model's method for tree views: "lora r=8", "ia3",
// "head+bitfit", "base". A registered method's key is followed by its block's label
// (spec::MethodBlock::label), so the methods must be registered first.
std::string method_label(const nlohmann::json& adaptation);

}  // namespace scion::lineage
