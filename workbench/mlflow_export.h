// `scion export-runs --format mlflow DIR`: the store's training runs in MLflow's file-store
// layout, so that `mlflow ui --backend-store-uri DIR` shows them.
//
// DIR (new or empty) becomes an MLflow tracking root:
//   DIR/0/meta.yaml                       MLflow's "Default" experiment, empty (the UI expects it)
//   DIR/1/meta.yaml                       the experiment holding the family's runs
//   DIR/1/<run_id>/meta.yaml              one folder per train, adapt or import run
//   DIR/1/<run_id>/params/<key>           the recipe, flattened ("train.optimizer.lr")
//   DIR/1/<run_id>/metrics/<key>          per-step loss, lr and validation metrics:
//                                         "<timestamp ms> <value> <step>" lines
//   DIR/1/<run_id>/tags/<key>             scion.model, scion.parent, scion.method,
//                                         scion.recipe_hash, scion.run, scion.kind, scion.status,
//                                         scion.host, mlflow.runName
// The store records no time per step, so every metric point carries the run's start time;
// MLflow plots by step. Run ids are derived from the store's run, so exporting the same
// store twice gives the same ids. Test runs are not exported.
#pragma once

#include <filesystem>
#include <string>

#include "lineage/store.h"

namespace scion::workbench {

struct MlflowExportSummary {
  std::string experiment_id;
  std::size_t runs = 0;
  std::size_t metric_points = 0;  // lines over all metric files
  std::size_t params = 0;
};

// REQUIRES: `dir` does not exist or is an empty folder (else invalid_argument).
Result<MlflowExportSummary> export_runs_mlflow(lineage::LineageStore& store,
                                               const std::filesystem::path& dir,
                                               const std::string& experiment_name);

}  // namespace scion::workbench
