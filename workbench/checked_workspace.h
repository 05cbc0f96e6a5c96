// The one definition of a valid workspace, shared by every command that reads the spec.
//
// load_checked() runs every check that needs no training, in one round: the spec itself
// (spec/loader.h), the parameter checks (workbench/parameter_checks.h), every dataset's rows
// (runtime/data/dataset_reader.h: readable, fields and columns present, labels declared,
// not empty) and every test and assertion compiled (workbench/behaviour_suite.h: lexicons,
// templates, perturbations, expected labels, expressions). Later checks run on what the
// earlier ones could load, so one run reports every error it can find. `scion validate`
// prints the result (cli/output.h, print_diagnostics); plan, train, adapt, run, test and the rest
// refuse to work until there are no errors.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "spec/diagnostic.h"
#include "spec/workspace.h"

namespace scion::workbench {

struct CheckedWorkspace {
  std::optional<spec::Workspace> workspace;  // set exactly when errors is empty
  // The spec's errors in file order, then each data file's in file order. A data row is
  // at "data/reviews.jsonl:201" (column 0), shown relative to the spec's directory.
  std::vector<spec::Diagnostic> errors;
  std::vector<spec::Diagnostic> warnings;  // valid, but probably not what was meant
};

// `-f -`: the spec is read from standard input, named "<stdin>" in diagnostics, and its
// relative paths (data files, imports) resolve against the current directory.
inline constexpr const char* kStdinSpec = "-";
inline constexpr const char* kStdinSpecName = "<stdin>";

// Loads and checks the spec at `spec_file` (as the user named it: diagnostics use that name),
// or kStdinSpec.
CheckedWorkspace load_checked(const std::string& spec_file);

}  // namespace scion::workbench
