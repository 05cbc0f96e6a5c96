// `scion export-runs --format mlflow DIR`: the store's training runs as an MLflow tracking
// folder (workbench/mlflow_export.h).
#include <iostream>

#include "cli/cmd_lineage_support.h"
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
  auto store = open_store_read_only(global);
  if (!store) return fail(store.status());
  auto summary = workbench::export_runs_mlflow(**store, opts.dir, opts.experiment);
  if (!summary) return fail(summary.status());
  if (global.json) {
    print_json({{"dir", opts.dir},
                {"format", opts.format},
                {"experiment", summary->experiment_id},
                {"runs_exported", summary->runs},
                {"params_exported", summary->params},
                {"metric_points", summary->metric_points}});
  } else {
    std::cout << "wrote " << summary->runs << " runs (" << summary->params << " params, "
              << summary->metric_points << " metric points) to " << opts.dir
              << " as MLflow experiment " << summary->experiment_id << " '" << opts.experiment
              << "'\nsee them with: mlflow ui --backend-store-uri " << opts.dir << "\n";
  }
  return kExitOk;
}

}  // namespace

void add_export_runs_command(CLI::App& app, const GlobalOptions& global, CommandAction& action) {
  auto opts = std::make_shared<ExportRunsOptions>();
  CLI::App* cmd = app.add_subcommand(
      "export-runs", "Write the store's training runs for an experiment tracker (MLflow)");
  cmd->add_option("--format", opts->format, "The tracker's format: mlflow")
      ->required()
      ->check(CLI::IsMember({"mlflow"}));
  cmd->add_option("DIR", opts->dir, "A new or empty folder: the MLflow tracking root")->required();
  cmd->add_option("--experiment", opts->experiment, "The experiment's name (default: scion)")
      ->option_text("NAME");
  cmd->footer(
      "Each train, adapt or import run becomes an MLflow run with the recipe as params,\n"
      "the per-step loss, lr and validation metrics, and tags scion.model, scion.parent,\n"
      "scion.method and scion.recipe_hash. Test runs are not exported.\n"
      "Example: scion export-runs --format mlflow mlruns && mlflow ui --backend-store-uri mlruns");
  cmd->callback([&global, &action, opts] {
    action = [&global, opts] { return run_export_runs(global, *opts); };
  });
}

}  // namespace scion::cli
