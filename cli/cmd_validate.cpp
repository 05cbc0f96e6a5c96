// `scion validate`: load the spec, run every check, and report all errors at once.
#include <iostream>

#include "cli/commands.h"
#include "cli/exit_codes.h"
#include "cli/output.h"
#include "spec/loader.h"
#include "spec/parameter_checks.h"

namespace scion::cli {
namespace {

nlohmann::json error_json(const spec::Diagnostic& d) {
  return {{"file", d.location.file},
          {"line", d.location.line},
          {"column", d.location.column},
          {"key_path", d.key_path},
          {"message", d.message}};
}

int run_validate(const GlobalOptions& global) {
  spec::LoadResult result = spec::load_workspace(global.spec_file);
  spec::check_parameters(result);
  const spec::Workspace* ws = result.workspace ? &*result.workspace : nullptr;
  if (global.json) {
    nlohmann::json errors = nlohmann::json::array();
    for (const spec::Diagnostic& d : result.errors) errors.push_back(error_json(d));
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
                {"errors", errors}});
    return ws ? kExitOk : kExitUsage;
  }
  for (const spec::Diagnostic& d : result.errors) {
    std::cerr << d.where() << ": " << paint("error", Color::kRed, stderr_is_tty()) << ": "
              << d.message << '\n';
  }
  if (!ws) {
    std::cerr << result.errors.size() << (result.errors.size() == 1 ? " error" : " errors")
              << " in " << global.spec_file << "; see docs/spec.md for every key\n";
    return kExitUsage;
  }
  std::cout << "ok: " << ws->models.size() << " models, " << ws->datasets.size() << " datasets, "
            << ws->tests.size() << " tests\n";
  return kExitOk;
}

}  // namespace

void add_validate_command(CLI::App& app, const GlobalOptions& global, CommandAction& action) {
  CLI::App* cmd = app.add_subcommand("validate", "Check the workspace spec and report every error");
  cmd->footer(
      "Prints each error as file:line:col: error: <what> at <key.path>, or a summary.\n"
      "Exit codes: 0 the spec is valid, 2 it has errors.\n"
      "Examples:   scion -C examples/sentiment validate\n"
      "            scion -f my-family.yaml validate --json");
  cmd->callback([&global, &action] { action = [&global] { return run_validate(global); }; });
}

}  // namespace scion::cli
