// `scion gc [--dry-run]`: remove tensors no model refers to any more.
#include <iostream>

#include "cli/cmd_lineage_support.h"
#include "cli/commands.h"
#include "cli/exit_codes.h"
#include "cli/output.h"
#include "lineage/fsck.h"

namespace scion::cli {

namespace {

int run_gc(const GlobalOptions& global, bool dry_run) {
  auto store = open_store(global, /*create=*/false);
  if (!store.is_ok()) return fail(store.status());
  auto report = lineage::collect_garbage(**store, dry_run);
  if (!report.is_ok()) return fail(report.status());
  if (global.json) {
    print_json({{"dry_run", dry_run},
                {"removed_objects", report->removed_objects},
                {"removed_files", report->removed_files},
                {"bytes_freed", report->bytes_freed}});
    return kExitOk;
  }
  if (global.verbosity > 0) {
    for (const auto& digest : report->removed_objects) std::cout << "object " << digest << '\n';
    for (const auto& file : report->removed_files) std::cout << "file   " << file << '\n';
  }
  std::cout << (dry_run ? "would remove " : "removed ") << report->removed_objects.size()
            << " unreferenced object(s) and " << report->removed_files.size() << " stray file(s), "
            << (dry_run ? "freeing " : "freed ") << human_bytes(report->bytes_freed) << '\n';
  return kExitOk;
}

}  // namespace

void add_gc_command(CLI::App& app, const GlobalOptions& global, CommandAction& action) {
  CLI::App* cmd = app.add_subcommand("gc", "Remove stored tensors that no model refers to");
  auto dry_run = std::make_shared<bool>(false);
  cmd->add_flag("--dry-run,-n", *dry_run, "List what would be removed; change nothing");
  cmd->footer("Example: scion gc --dry-run -v");
  cmd->callback([&global, &action, dry_run] {
    action = [&global, dry_run] { return run_gc(global, *dry_run); };
  });
}

}  // namespace scion::cli
