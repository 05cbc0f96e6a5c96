#include "workbench/store_checks.h"

#include <set>
#include <vector>

#include "runtime/model/parameter_table.h"
#include "workbench/checkpoints.h"

namespace scion::workbench {
namespace {

std::string listed(const std::vector<std::string>& names) {
  std::string out;
  for (std::size_t i = 0; i < names.size() && i < 5; ++i) out += (i ? ", " : "") + names[i];
  return names.size() > 5 ? out + " and " + std::to_string(names.size() - 5) + " more" : out;
}

}  // namespace

Status check_parameter_names(lineage::LineageStore& store, const spec::Workspace& ws,
                             lineage::FsckReport& report) {
  for (const spec::Model& model : ws.models) {
    auto stored = store.find_model(model.name);
    if (!stored.is_ok()) return stored.status();
    if (!stored->has_value() || (*stored)->recipe_hash != model.recipe_hash) continue;
    auto present = store.parameters(model.name);
    if (!present.is_ok()) return present.status();
    auto unbacked = store.missing_objects(model.name);  // reported already; still recorded
    if (!unbacked.is_ok()) return unbacked.status();
    std::set<std::string> names;
    for (const auto& p : *present) names.insert(p.name);
    for (const auto& p : *unbacked) names.insert(p.name);
    std::vector<std::string> missing, extra;
    std::set<std::string> expected;
    for (const runtime::ParameterSpec& p : runtime::parameter_table(ws, model)) {
      expected.insert(p.name);
      if (!names.count(p.name)) missing.push_back(p.name);
    }
    for (const std::string& name : names)
      if (!expected.count(name)) extra.push_back(name);
    const std::string subject = "model '" + model.name + "'";
    const std::string fix = "; retrain it (`scion run --force " + model.name + "`)";
    if (!missing.empty())
      report.problems.push_back({subject, "lacks " + std::to_string(missing.size()) +
                                              " parameter(s) its spec defines: " + listed(missing) +
                                              fix});
    if (!extra.empty())
      report.problems.push_back(
          {subject, "has " + std::to_string(extra.size()) +
                        " parameter(s) its spec does not define: " + listed(extra) + fix});
  }
  return Status::ok();
}

Status check_against_spec(lineage::LineageStore& store, const spec::Workspace* workspace,
                          const std::string& why_no_spec, lineage::FsckReport& report) {
  if (workspace) {
    // Damage the store's own checks report (parent links in a cycle) stops these checks,
    // not fsck: it says so in a note and goes on to exit 1 with the problem.
    Status names = check_parameter_names(store, *workspace, report);
    if (names.code() == StatusCode::kCorruption)
      report.notes.push_back({"spec", "parameter names not checked against it: " + names.message()});
    else
      SCION_RETURN_IF_ERROR(names);
  } else {
    report.notes.push_back({"spec", why_no_spec + "; parameter names not checked against it"});
  }
  auto checkpoints = list_checkpoints(store, workspace);
  if (!checkpoints.is_ok() && checkpoints.status().code() == StatusCode::kCorruption) {
    report.notes.push_back(
        {"checkpoints", "not checked: " + checkpoints.status().message()});
    return Status::ok();
  }
  if (!checkpoints.is_ok()) return checkpoints.status();
  for (const CheckpointFile& c : *checkpoints)
    if (!c.stale.empty())
      report.notes.push_back({"checkpoint " + c.path.string(),
                              "cannot be resumed: " + c.stale + "; 'scion gc' removes it"});
  return Status::ok();
}

}  // namespace scion::workbench
