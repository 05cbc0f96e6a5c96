#include "workbench/rank_agreement.h"

#include <vector>

#include "runtime/comm/value_agreement.h"
#include "spec/file_digest.h"
#include "spec/recipe_hash.h"

namespace scion::workbench {

Status agree_on_workspace(runtime::Communicator& comm, const spec::Workspace& ws) {
  if (comm.size() == 1) return Status::ok();
  std::vector<runtime::AgreedValue> values = {{"scion's version", SCION_VERSION}};
  for (const spec::Dataset& d : ws.datasets)
    values.push_back({"dataset '" + d.name + "'", d.digest});
  for (const spec::Model& m : ws.models)
    if (!m.import_digest.empty())
      values.push_back({"the checkpoint imported as '" + m.name + "'", m.import_digest});
  values.push_back({"the spec's canonical digest", spec::workspace_digest(ws)});
  return runtime::agree_on_values(comm, values);
}

Status agree_on_plan(runtime::Communicator& comm, const Plan& plan) {
  if (comm.size() == 1) return Status::ok();
  // What training does: which models run with which recipe, in which groups and waves
  // (not the memory figures, which each machine measures for itself).
  std::string text;
  for (const PlannedModel& m : plan.models)
    text += m.name + " " + model_state_name(m.state) + " " + m.recipe_hash + " " +
            std::to_string(m.steps) + "\n";
  for (const PlannedGroup& g : plan.groups) {
    text += "group wave " + std::to_string(g.wave) + ":";
    for (const std::string& model : g.models) text += " " + model;
    text += "\n";
  }
  return runtime::agree_on_values(comm, {{"the training plan", spec::sha256_hex(text)}});
}

}  // namespace scion::workbench
