// `scion export-runs --format mlflow DIR`: the store's runs as an MLflow tracking folder,
// brought up to date on every export (workbench/mlflow_export.h).
#include <iostream>

#include "cli/cmd_lineage_support.h"
#include "cli/command_context.h"
#include "cli/commands.h"
#include "cli/exit_codes.h"
#include "cli/output.h"
#include "cli/output_path.h"
#include "workbench/mlflow_export.h"

namespace scion::cli {
namespace {

struct ExportRunsOptions {
  std::string format;
  std::string dir;
  std::string experiment = "scion";
};

int run_export_runs(const GlobalOptions& global, const ExportRunsOptions& opts) {
  if (auto where = checked_output_folder(opts.dir, global.store_path(), "DIR"); !where.is_ok())
    return fail(where.status());
  auto context = open_store_context(global, workbench::StoreAccess::kRead);
  if (!context.is_ok()) return fail(context.status());
  lineage::LineageStore& store = (*context)->store();
  std::string why_no_spec;  // without a valid spec, no PEFT folders as artifacts
  const std::optional<spec::Workspace> ws = load_workspace_if_valid(global, why_no_spec);
  auto summary =
      workbench::export_runs_mlflow(store, ws ? &*ws : nullptr, opts.dir, opts.experiment);
  if (!summary) return fail(summary.status());
  if (global.json) {
    print_json({{"dir", opts.dir},
                {"format", opts.format},
                {"experiment", summary->experiment_id},
                {"runs_exported", summary->runs},
                {"new_runs", summary->new_runs},
                {"artifacts", summary->artifacts},
                {"params_exported", summary->params},
                {"metric_points", summary->metric_points}});
  } else {
    std::cout << "wrote " << summary->runs << " runs (" << summary->new_runs << " new; "
              << summary->params << " params, " << summary->metric_points << " metric points, "
              << summary->artifacts << " new artifacts) to " << opts.dir << " as MLflow experiment "
              << summary->experiment_id << " '" << opts.experiment
              << "'\nsee them with: mlflow ui --backend-store-uri " << opts.dir << "\n";
  }
  return kExitOk;
}

}  // namespace

void add_export_runs_command(CLI::App& app, const GlobalOptions& global, CommandAction& action) {
  auto opts = std::make_shared<ExportRunsOptions>();
  CLI::App* cmd = app.add_subcommand(
      "export-runs", "Mirror the store's runs into an experiment tracker's folder (MLflow)");
  cmd->add_option("--format", opts->format, "The tracker's format: mlflow")
      ->required()
      ->check(CLI::IsMember({"mlflow"}));
  cmd->add_option("DIR", opts->dir,
                  "The MLflow tracking root: a new or empty folder, or one exported to before")
      ->required();
  cmd->add_option("--experiment", opts->experiment, "The experiment's name (default: scion)")
      ->option_text("NAME");
  cmd->footer(
      "Each train, adapt, import or restore run becomes an MLflow run with the recipe as\n"
      "params, the per-step loss, lr and validation metrics (each at its step's time), the\n"
      "model's own tensors (and PEFT folder) as artifacts, and tags scion.model,\n"
      "scion.parent, scion.method and scion.recipe_hash; each test run one with the\n"
      "failure rate of each test, each `scion eval` result one with its metrics, both\n"
      "nested under the run that made the version. Exporting again into the same folder\n"
      "updates it: new runs are added, changed ones rewritten, nothing duplicated.\n"
      "Example: scion export-runs --format mlflow mlruns && mlflow ui --backend-store-uri mlruns");
  cmd->callback([&global, &action, opts] {
    action = [&global, opts] { return run_export_runs(global, *opts); };
  });
}

}  // namespace scion::cli
