// Running stored models named with versions (`scion predict`, `scion eval`): a workspace
// holds one version of each model, so the models named are split into rounds. The first
// round holds every model named at the spec's own recipe (MODEL, or MODEL@... naming that
// version), in the spec as it is; each other version named gets a round of its own, in
// the spec as it was for that version (workspace_at, workbench/model_version.h). Each
// round is one evaluation pass; results carry the names as given.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "lineage/store.h"
#include "spec/workspace.h"

namespace scion::workbench {

struct VersionRound {
  spec::Workspace workspace;
  std::vector<std::string> models;            // spec names, each once, in the order named
  std::map<std::string, std::string> labels;  // spec name -> as named ("lora@3", "lora")
};

// Errors: an unknown model or version (resolve_version), a version that cannot run in
// this spec (workspace_at). A model named twice (the same version) runs once.
Result<std::vector<VersionRound>> version_rounds(const spec::Workspace& ws,
                                                 lineage::LineageStore& store,
                                                 const std::vector<std::string>& named);

}  // namespace scion::workbench
