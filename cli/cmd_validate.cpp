// `scion validate`: run every check that needs no training (workbench/checked_workspace.h) and
// report all errors at once.
#include <iostream>

#include "cli/commands.h"
#include "cli/exit_codes.h"
#include "cli/output.h"
#include "workbench/checked_workspace.h"

namespace scion::cli {
namespace {

nlohmann::json diagnostic_json(const spec::Diagnostic& d) {
  return {{"file", d.location.file},
          {"line", d.location.line},
          {"column", d.location.column},
          {"key_path", d.key_path},
          {"message", d.message}};
}

nlohmann::json diagnostics_json(const std::vector<spec::Diagnostic>& diagnostics) {
  nlohmann::json out = nlohmann::json::array();
  for (const spec::Diagnostic& d : diagnostics) out.push_back(diagnostic_json(d));
  return out;
}

int run_validate(const GlobalOptions& global) {
  const workbench::CheckedWorkspace result = workbench::load_checked(global.spec_file);
  const spec::Workspace* ws = result.workspace ? &*result.workspace : nullptr;
  if (global.json) {
    nlohmann::json counts = nullptr;
    if (ws)
      counts = {{"models", ws->models.size()},
                {"datasets", ws->datasets.size()},
                {"tests", ws->tests.size()},
                {"assertions", ws->assertions.size()},
                {"shares", ws->shares.size()}};
    print_json({{"ok", ws != nullptr},
                {"spec", global.spec_file},
                {"counts", counts},
                {"errors", diagnostics_json(result.errors)},
                {"warnings", diagnostics_json(result.warnings)}});
    return ws ? kExitOk : kExitUsage;
  }
  print_diagnostics(result);
  if (!ws) {
    std::cerr << result.errors.size() << (result.errors.size() == 1 ? " error" : " errors")
              << " in "
              << (global.spec_file == workbench::kStdinSpec ? workbench::kStdinSpecName
                                                            : global.spec_file)
              << "; see docs/spec.md for every key\n";
    return kExitUsage;
  }
  std::cout << "ok: " << ws->models.size() << " models, " << ws->datasets.size() << " datasets, "
            << ws->tests.size() << " tests\n";
  return kExitOk;
}

}  // namespace

void add_validate_command(CLI::App& app, const GlobalOptions& global, CommandAction& action) {
  CLI::App* cmd = app.add_subcommand(
      "validate", "Check the spec, its data files, tests and assertions; report every error");
  cmd->footer(
      "Prints each error as file:line:col: error: <what> at <key.path> (a data row as\n"
      "data/file.jsonl:LINE), warnings the same way, then a summary.\n"
      "Exit codes: 0 the spec is valid, 2 it has errors.\n"
      "Examples:   scion -C examples/sentiment validate\n"
      "            scion -f my-family.yaml validate --json");
  cmd->callback([&global, &action] { action = [&global] { return run_validate(global); }; });
}

}  // namespace scion::cli
