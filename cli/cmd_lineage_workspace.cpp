// Loading the workspace spec for the commands (workbench/checked_workspace.h).
#include <iostream>

#include "cli/cmd_lineage_support.h"
#include "cli/exit_codes.h"
#include "cli/output.h"
#include "workbench/checked_workspace.h"

namespace scion::cli {

std::optional<spec::Workspace> load_workspace_if_valid(const GlobalOptions& global,
                                                       std::string& why) {
  const std::filesystem::path path = global.spec_file;
  std::error_code ec;
  if (global.spec_file != workbench::kStdinSpec && !std::filesystem::exists(path, ec)) {
    why = "no spec file '" + path.string() + "'";
    return std::nullopt;
  }
  workbench::CheckedWorkspace checked = workbench::load_checked(global.spec_file);
  if (!checked.workspace) {
    why = "the spec '" + path.string() + "' has " + std::to_string(checked.errors.size()) +
          " error(s); run 'scion validate'";
    return std::nullopt;
  }
  return std::move(checked.workspace);
}

Result<spec::Workspace> load_workspace_or_report(const GlobalOptions& global) {
  workbench::CheckedWorkspace checked = workbench::load_checked(global.spec_file);
  // `scion run` loads the spec for training and again for testing: its warnings are
  // news once per command.
  static bool warnings_shown = false;
  if (warnings_shown) checked.warnings.clear();
  warnings_shown = warnings_shown || checked.workspace.has_value();
  print_diagnostics(checked);
  if (checked.workspace) return std::move(*checked.workspace);
  return spec_error("the spec '" + global.spec_file + "' has " +
                    std::to_string(checked.errors.size()) +
                    " error(s) (listed above); fix them and retry");
}

}  // namespace scion::cli
