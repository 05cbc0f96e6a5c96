// `scion report [-o FILE] [MODEL@N ...]`: the family as one self-contained HTML page (tree,
// test matrix, violations, blame, training curves, recipes), each model at its current
// version or at the version named. Gathering: workbench/family_report_builder.h;
// rendering: report/html_report.h.
#include <filesystem>
#include <iostream>
#include <optional>

#include "cli/cmd_lineage_support.h"
#include "cli/command_context.h"
#include "cli/commands.h"
#include "cli/exit_codes.h"
#include "cli/output.h"
#include "cli/output_path.h"
#include "lineage/env.h"
#include "report/html_report.h"
#include "workbench/family_report_builder.h"
#include "workbench/model_version.h"

namespace scion::cli {
namespace {

struct ReportOptions {
  std::string output = "report.html";
  bool force = false;
  std::vector<std::string> versions;  // MODEL@N, MODEL@<prefix>: shown at that version
};

// The report's values from the spec (when valid) and the store (when there is one).
Result<report::FamilyReport> gather(const GlobalOptions& global,
                                    const std::vector<std::string>& versions) {
  workbench::ReportHeading heading{
      .title = std::filesystem::absolute(global.spec_file).parent_path().filename().string(),
      .scion_version = SCION_VERSION};
  std::string why_no_spec;
  const std::optional<spec::Workspace> ws = load_workspace_if_valid(global, why_no_spec);
  if (!ws) heading.spec_note = why_no_spec + "; showing the store only";
  auto context = open_store_context(
      global, ws ? workbench::StoreAccess::kReadIfPresent : workbench::StoreAccess::kRead);
  if (!context.is_ok()) return context.status();
  lineage::LineageStore* store = (*context)->store_or_null();  // null: no store yet
  std::map<std::string, std::string> pinned;
  for (const std::string& named : versions) {
    if (!store) return not_found("no store yet, so no version of '" + named + "' to show");
    auto version = workbench::resolve_version(*store, named);
    if (!version.is_ok()) return version.status();
    pinned[version->model] = version->recipe_hash;
  }
  return workbench::build_family_report(store, ws ? &*ws : nullptr, heading, pinned);
}

int run_report(const GlobalOptions& global, const ReportOptions& opts) {
  const bool to_stdout = opts.output == "-";
  std::filesystem::path target;
  if (!to_stdout) {
    auto checked = checked_output_path(opts.output, global.store_path(), opts.force, "-o");
    if (!checked.is_ok()) return fail(checked.status());
    target = *checked;
  }
  auto report = gather(global, opts.versions);
  if (!report.is_ok()) return fail(report.status());
  const std::string html = report::render_html(*report);
  if (to_stdout) {
    std::cout << html;
    return kExitOk;
  }
  const std::span<const std::byte> pieces[] = {std::as_bytes(std::span(html.data(), html.size()))};
  Status written = lineage::write_file_atomically(lineage::default_env(), target, pieces);
  if (!written.is_ok()) return fail(written);
  if (global.json) {
    print_json({{"file", opts.output},
                {"bytes", html.size()},
                {"models", report->models.size()},
                {"matrix_cells", report->matrix.size()},
                {"curves", report->curves.size()}});
  } else {
    std::cout << "wrote " << opts.output << " ("
              << human_bytes(static_cast<std::int64_t>(html.size()))
              << "): " << report->models.size() << " models, " << report->matrix.size()
              << " test results, " << report->curves.size() << " training curves\n";
  }
  return kExitOk;
}

}  // namespace

void add_report_command(CLI::App& app, const GlobalOptions& global, CommandAction& action) {
  auto opts = std::make_shared<ReportOptions>();
  CLI::App* cmd = app.add_subcommand("report", "The family as one self-contained HTML page");
  cmd->add_option("-o,--output", opts->output,
                  "The HTML file to write (default report.html; - for stdout)")
      ->option_text("FILE");
  cmd->add_flag("--force", opts->force, "Replace FILE when it exists");
  cmd->add_option("MODEL", opts->versions,
                  "Show these models at these stored versions (MODEL@N or MODEL@<hash prefix>) "
                  "instead of their current ones");
  cmd->footer(
      "The page needs no network: styles and pictures (SVG) are inline, no scripts.\n"
      "It shows the family tree, the behavioural-test matrix as a heat map (each cell links\n"
      "to its failing cases), the top assertion violations, blame from stored results,\n"
      "training and validation curves, and each model's recipe.\n"
      "Example: scion report -o family.html && xdg-open family.html\n"
      "         scion report -o before.html review-lora@12");
  cmd->callback(
      [&global, &action, opts] { action = [&global, opts] { return run_report(global, *opts); }; });
}

}  // namespace scion::cli
