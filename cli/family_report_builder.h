// Gathers what `scion report` shows (report/family_report.h) from the store and, when
// valid, the spec: the family tree with statuses, the per-step metrics of the run that
// made each model's parameters, each model's newest and previous test runs (the matrix,
// its failing cases and assertion violations), and blame from the ancestors' stored
// results. Reads only; runs no model.
#pragma once

#include "cli/global_options.h"
#include "report/family_report.h"
#include "base/status.h"

namespace scion::cli {

// Errors: no store and no valid spec (kNotFound), a store that cannot be read.
Result<report::FamilyReport> build_family_report(const GlobalOptions& global);

}  // namespace scion::cli
