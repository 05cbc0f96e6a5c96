// Spec checks that need the parameter table (runtime/parameter_table.h): shared modules
// must have the same shapes in every model that shares them, and every freeze/unfreeze
// glob must match some parameter.
//
// These run after load_workspace succeeds. They live apart from the loader because the
// runtime library depends on spec; programs that link both call check_parameters.
#pragma once

#include <string>
#include <vector>

#include "spec/loader.h"

namespace scion::spec {

// REQUIRES: workspace passed load_workspace.
std::vector<Diagnostic> parameter_diagnostics(const Workspace& workspace);

// Appends parameter_diagnostics to result.errors; drops the workspace if any were found,
// so that a LoadResult with a workspace has passed every check.
void check_parameters(LoadResult& result);

}  // namespace scion::spec
