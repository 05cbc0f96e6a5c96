// `scion fsck`: verify every object's digest and every reference in the store, and with
// a valid spec each up-to-date model's parameter names. Notes checkpoints that cannot be
// resumed. Reports and never repairs; exit 1 when it finds damage.
#include <iostream>

#include "cli/cmd_lineage_support.h"
#include "cli/command_context.h"
#include "cli/commands.h"
#include "cli/exit_codes.h"
#include "cli/output.h"
#include "lineage/fsck.h"
#include "workbench/store_checks.h"

namespace scion::cli {

namespace {

nlohmann::json findings_json(const std::vector<lineage::FsckFinding>& findings) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& f : findings) out.push_back({{"subject", f.subject}, {"message", f.message}});
  return out;
}

int run_fsck(const GlobalOptions& global) {
  auto context = open_store_context(global, workbench::StoreAccess::kRead);
  if (!context.is_ok()) return fail(context.status());
  lineage::LineageStore& store = (*context)->store();
  auto report = lineage::check_store(store);
  if (!report.is_ok()) return fail(report.status());
  if (report->complete) {
    std::string why_no_spec;
    const auto workspace = load_workspace_if_valid(global, why_no_spec);
    if (Status s = workbench::check_against_spec(store, workspace ? &*workspace : nullptr,
                                                 why_no_spec, *report);
        !s.is_ok())
      return fail(s);
  }
  if (global.json) {
    print_json({{"store", store.dir().string()},
                {"ok", report->ok()},
                {"objects_checked", report->objects_checked},
                {"bytes_checked", report->bytes_checked},
                {"parameters_checked", report->parameters_checked},
                {"problems", findings_json(report->problems)},
                {"notes", findings_json(report->notes)}});
  } else {
    const bool tty = stdout_is_tty();
    for (const auto& p : report->problems) {
      std::cout << paint("damaged", Color::kRed, tty) << "  " << p.subject << ": " << p.message
                << '\n';
    }
    if (global.verbosity >= 0) {
      for (const auto& n : report->notes) {
        std::cout << paint("note", Color::kCyan, tty) << "     " << n.subject << ": " << n.message
                  << '\n';
      }
    }
    std::cout << "checked " << report->objects_checked << " objects ("
              << human_bytes(report->bytes_checked) << ") and " << report->parameters_checked
              << " parameter references in " << store.dir().string() << ": "
              << (report->ok() ? paint("ok", Color::kGreen, tty)
                               : paint(std::to_string(report->problems.size()) + " problem(s)",
                                       Color::kRed, tty))
              << '\n';
  }
  return report->ok() ? kExitOk : kExitFailures;
}

}  // namespace

void add_fsck_command(CLI::App& app, const GlobalOptions& global, CommandAction& action) {
  CLI::App* cmd =
      app.add_subcommand("fsck", "Verify every stored tensor's digest and every reference");
  cmd->footer(
      "Reports damage and never repairs it. Exit 0: the store is sound; 1: problems found.\n"
      "Example: scion fsck --store examples/sentiment/.scion");
  cmd->callback([&global, &action] { action = [&global] { return run_fsck(global); }; });
}

}  // namespace scion::cli
