// `scion gc [--dry-run] [--keep N] [--force-orphans]`: remove tensors no version of a model
// refers to any more, and checkpoints that can no longer be resumed; with --keep N, first the
// versions of models that neither the N most recently seen spec versions nor a tagged one name
// (lineage/fsck.h, GcPolicy).
#include <iostream>
#include <limits>

#include "cli/cmd_lineage_support.h"
#include "cli/command_context.h"
#include "cli/commands.h"
#include "cli/exit_codes.h"
#include "cli/output.h"
#include "lineage/fsck.h"
#include "workbench/checkpoints.h"
#include "workbench/spec_version.h"

namespace scion::cli {

namespace {

// The spec on disk, when it loads: gc keeps the versions it names and the checkpoints its
// models may resume. Without it, says why and keeps checkpoints whose model may resume them.
std::optional<spec::Workspace> spec_on_disk(const GlobalOptions& global) {
  std::string why_no_spec;
  auto workspace = load_workspace_if_valid(global, why_no_spec);
  if (!workspace && global.verbosity >= 0)
    print_note(why_no_spec + "; keeping checkpoints whose model may still resume them");
  return workspace;
}

struct GcOptions {
  bool dry_run = false;
  bool force_orphans = false;  // also remove object files no run of the store wrote
  std::int64_t keep = -1;      // --keep N; -1: keep every version
};

int run_gc(const GlobalOptions& global, const GcOptions& options) {
  const bool dry_run = options.dry_run;
  auto context = open_store_context(global, workbench::StoreAccess::kWrite);
  if (!context.is_ok()) return fail(context.status());
  lineage::LineageStore& store = (*context)->store();
  const auto workspace = spec_on_disk(global);
  lineage::GcPolicy policy{.force_orphans = options.force_orphans};
  if (options.keep >= 0) policy.keep_spec_versions = options.keep;
  if (workspace) policy.spec_members = workbench::spec_members(*workspace);
  auto report = lineage::collect_garbage(store, dry_run, policy);
  if (!report.is_ok()) return fail(report.status());
  auto checkpoints =
      workbench::remove_stale_checkpoints(store, workspace ? &*workspace : nullptr, dry_run);
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
                {"bytes_freed", report->bytes_freed},
                {"kept_orphans", report->kept_orphans},
                {"orphan_bytes", report->orphan_bytes}});
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
  if (!report->kept_orphans.empty()) {
    if (global.verbosity > 0)
      for (const auto& file : report->kept_orphans) std::cout << "kept   " << file << '\n';
    print_warning("kept " + std::to_string(report->kept_orphans.size()) + " object file(s) (" +
                  human_bytes(report->orphan_bytes) +
                  ") that lineage.db does not record and no run in the store wrote: its record "
                  "of them may be lost (an older backup restored?). Restore lineage.db, or "
                  "remove them with `scion gc --force-orphans`");
  }
  return kExitOk;
}

}  // namespace

void add_gc_command(CLI::App& app, const GlobalOptions& global, CommandAction& action) {
  CLI::App* cmd = app.add_subcommand(
      "gc", "Remove stored tensors no model refers to and checkpoints that cannot be resumed");
  auto options = std::make_shared<GcOptions>();
  cmd->add_flag("--dry-run,-n", options->dry_run, "List what would be removed; change nothing");
  cmd->add_option("--keep", options->keep,
                  "Also remove the versions of models that neither the N most recently seen "
                  "spec versions nor a tagged one name (default: keep every version)")
      ->option_text("N")
      ->check(whole_number(0, std::numeric_limits<std::int32_t>::max()));
  cmd->add_flag("--force-orphans", options->force_orphans,
                "Also remove object files that no run in the store wrote (kept otherwise)");
  cmd->footer(
      "Every version of every model is kept unless --keep N is given; a model's current\n"
      "version, the versions a tagged spec version (`scion tag`) or the spec on disk names\n"
      "and the parent versions they were made from are always kept (docs/store.md,\n"
      "\"fsck and gc\").\n"
      "Object files that lineage.db does not record are removed when a run of the store\n"
      "wrote them (an interrupted write); any other is an orphan, kept unless\n"
      "--force-orphans: the database may have lost its record of it.\n"
      "Example: scion gc --dry-run -v\n"
      "         scion gc --keep 3");
  cmd->callback([&global, &action, options] {
    action = [&global, options] { return run_gc(global, *options); };
  });
}

}  // namespace scion::cli
