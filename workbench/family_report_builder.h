// Gathers what `scion report` shows (report/family_report.h) from the store and, when
// valid, the spec: the family tree with statuses (workbench/lineage_views.h), the per-step
// metrics of the run that made each model's parameters, each test's newest and previous
// stored result of each model's version (the matrix, its failing cases and assertion
// violations), and blame from the
// ancestors' stored results, traced by the rule `scion lineage blame` uses
// (workbench::failure_origin, workbench/blame.h). Reads only; runs no model.
#pragma once

#include <map>
#include <string>

#include "base/status.h"
#include "lineage/store.h"
#include "report/family_report.h"
#include "spec/workspace.h"

namespace scion::workbench {

// What the report says of itself; the caller knows it.
struct ReportHeading {
  std::string title;          // the workspace folder's name
  std::string scion_version;
  std::string spec_note;      // why the spec was not used, when it was not
};

// `store` null: no store yet; `workspace` null: no valid spec. `pinned`: model -> recipe
// hash of a stored version to show instead of the current one (`scion report MODEL@N`).
// Errors: store reads.
Result<report::FamilyReport> build_family_report(
    lineage::LineageStore* store, const spec::Workspace* workspace, const ReportHeading& heading,
    const std::map<std::string, std::string>& pinned = {});

}  // namespace scion::workbench
