// `scion gc [--dry-run] [--keep N]`: remove tensors no version of a model refers to any
// more, and checkpoints that can no longer be resumed; with --keep N, first the versions
// of models that neither the N most recently seen spec versions nor a tagged one name
// (lineage/fsck.h, GcPolicy).
#include <iostream>

#include "cli/cmd_lineage_support.h"
#include "cli/commands.h"
#include "cli/exit_codes.h"
#include "cli/output.h"
#include "lineage/fsck.h"
#include "workbench/checkpoints.h"

namespace scion::cli {

namespace {

// Removes (unless dry_run) the checkpoints that cannot be resumed any more.
Result<std::vector<workbench::CheckpointFile>> collect_checkpoints(const GlobalOptions& global,
                                                                   lineage::LineageStore& store,
                                                                   bool dry_run) {
  std::string why_no_spec;
  const auto workspace = load_workspace_if_valid(global, why_no_spec);
  if (!workspace && global.verbosity >= 0)
    print_note(why_no_spec + "; keeping checkpoints whose model may still resume them");
  return workbench::remove_stale_checkpoints(store, workspace ? &*workspace : nullptr, dry_run);
}

int run_gc(const GlobalOptions& global, bool dry_run, std::optional<std::int64_t> keep) {
  auto store = open_store(global, /*create=*/false);
  if (!store.is_ok()) return fail(store.status());
  auto report = lineage::collect_garbage(**store, dry_run, {.keep_spec_versions = keep});
  if (!report.is_ok()) return fail(report.status());
  auto checkpoints = collect_checkpoints(global, **store, dry_run);
  if (!checkpoints.is_ok()) return fail(checkpoints.status());
  if (global.json) {
    nlohmann::json removed_checkpoints = nlohmann::json::array();
    for (const workbench::CheckpointFile& c : *checkpoints)
      removed_checkpoints.push_back(
          {{"path", c.path.string()}, {"model", c.model}, {"reason", c.stale}});
    nlohmann::json removed_versions = nlohmann::json::array();
    for (const auto& v : report->removed_versions)
      removed_versions.push_back({{"model", v.model},
                                  {"recipe_hash", v.recipe_hash},
                                  {"run", v.run ? nlohmann::json(*v.run) : nlohmann::json()}});
    print_json({{"dry_run", dry_run},
                {"removed_versions", removed_versions},
                {"removed_objects", report->removed_objects},
                {"removed_files", report->removed_files},
                {"removed_checkpoints", removed_checkpoints},
                {"bytes_freed", report->bytes_freed}});
    return kExitOk;
  }
  if (global.verbosity > 0) {
    for (const auto& digest : report->removed_objects) std::cout << "object " << digest << '\n';
    for (const auto& file : report->removed_files) std::cout << "file   " << file << '\n';
  }
  for (const auto& v : report->removed_versions)
    std::cout << (dry_run ? "would remove " : "removed ") << "version " << v.model << "@"
              << (v.run ? std::to_string(*v.run) : v.recipe_hash.substr(0, 12)) << " (recipe "
              << v.recipe_hash.substr(0, 12) << ")\n";
  std::cout << (dry_run ? "would remove " : "removed ") << report->removed_objects.size()
            << " unreferenced object(s) and " << report->removed_files.size() << " stray file(s), "
            << (dry_run ? "freeing " : "freed ") << human_bytes(report->bytes_freed) << '\n';
  for (const workbench::CheckpointFile& c : *checkpoints)
    std::cout << (dry_run ? "would remove " : "removed ") << "checkpoint " << c.path.string()
              << ": " << c.stale << '\n';
  return kExitOk;
}

}  // namespace

void add_gc_command(CLI::App& app, const GlobalOptions& global, CommandAction& action) {
  CLI::App* cmd = app.add_subcommand(
      "gc", "Remove stored tensors no model refers to and checkpoints that cannot be resumed");
  auto dry_run = std::make_shared<bool>(false);
  auto keep = std::make_shared<std::int64_t>(-1);
  cmd->add_flag("--dry-run,-n", *dry_run, "List what would be removed; change nothing");
  cmd->add_option("--keep", *keep,
                  "Also remove the versions of models that neither the N most recently seen "
                  "spec versions nor a tagged one name (default: keep every version)")
      ->option_text("N")
      ->check(CLI::NonNegativeNumber);
  cmd->footer(
      "Every version of every model is kept unless --keep N is given; a model's current\n"
      "version, the versions a tagged spec version names (`scion tag`) and the parent\n"
      "versions they were made from are always kept (docs/store.md, \"fsck and gc\").\n"
      "Example: scion gc --dry-run -v\n"
      "         scion gc --keep 3");
  cmd->callback([&global, &action, dry_run, keep] {
    action = [&global, dry_run, keep] {
      return run_gc(global, *dry_run,
                    *keep >= 0 ? std::optional<std::int64_t>(*keep) : std::nullopt);
    };
  });
}

}  // namespace scion::cli
