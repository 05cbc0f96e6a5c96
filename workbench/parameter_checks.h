// Spec checks that need the parameter table (runtime/model/parameter_table.h): shared modules
// must have the same shapes in every model that shares them, and every freeze/unfreeze
// glob must match some parameter.
//
// These run after load_workspace succeeds. They live in workbench/, above both spec/ and
// runtime/, because the parameter table is the runtime's: spec/ stays below runtime/.
#pragma once

#include <string>
#include <vector>

#include "spec/loader.h"

namespace scion::workbench {

// REQUIRES: workspace passed load_workspace.
std::vector<spec::Diagnostic> parameter_diagnostics(const spec::Workspace& workspace);

// Appends parameter_diagnostics to result.errors; drops the workspace if any were found,
// so that a LoadResult with a workspace has passed every check.
void check_parameters(spec::LoadResult& result);

}  // namespace scion::workbench
