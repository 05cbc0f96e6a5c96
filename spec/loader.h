// The spec loader: reads a scion.yaml and returns a validated Workspace, or every error.
//
// Loading is all-or-nothing: `workspace` is set only when `errors` is empty, and then
// every invariant documented in spec/workspace.h holds (names resolve, parents come
// before children, no cycles, values in range, data files exist and are digested, recipe
// hashes are set). The loader never throws and never crashes on hostile input: files over
// 16 MiB, alias explosions, deep nesting, binary data and invalid UTF-8 come back as
// ordinary diagnostics. The YAML keys are documented in docs/spec.md.
//
// Checks that need the parameter table (the shapes of shared modules, freeze globs that
// match nothing) live in workbench/parameter_checks.h, because the runtime depends on spec.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "spec/diagnostic.h"
#include "spec/workspace.h"

namespace scion::spec {

struct LoadResult {
  std::optional<Workspace> workspace;  // set exactly when errors is empty
  std::vector<Diagnostic> errors;      // in file order
  std::vector<Diagnostic> warnings;    // valid but probably unmeant, in file order
  // When errors is not empty and the spec is a mapping: the datasets, lexicons, tests and
  // assertions that loaded without errors of their own (and no models), so that the checks
  // that follow loading (data files, compiling tests) still report in the same round.
  std::optional<Workspace> partial;
};

// Reads and validates `spec_file`; relative paths inside resolve against its directory.
LoadResult load_workspace(const std::filesystem::path& spec_file);

// The same for YAML text already in memory. `display_name` names the text in
// diagnostics; relative paths resolve against `base_dir`.
LoadResult load_workspace_from_string(std::string_view yaml, const std::string& display_name,
                                      const std::filesystem::path& base_dir);

}  // namespace scion::spec
