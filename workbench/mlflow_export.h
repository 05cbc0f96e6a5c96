// `scion export-runs --format mlflow DIR`: the store's runs in MLflow's file-store layout,
// so that `mlflow ui --backend-store-uri DIR` shows them. DIR is a living mirror: export
// again into the same folder and it is brought up to date (new runs added, changed runs
// rewritten, nothing duplicated: MLflow run ids derive from the store's runs).
//
// DIR becomes (or already is) an MLflow tracking root:
//   DIR/0/meta.yaml                  MLflow's "Default" experiment, empty (the UI expects it)
//   DIR/<E>/meta.yaml                the experiment named by --experiment (found by name in
//                                    DIR, else the next free id)
//   DIR/<E>/<run_id>/meta.yaml       one folder per run of the store:
//     train, adapt, import, restore    params: the recipe, flattened ("train.optimizer.lr");
//                                      metrics: per-step loss, lr, validation metrics, each
//                                      point at the time its step ended (the run's start for
//                                      stores older than per-step times);
//                                      artifacts/<model>.safetensors: the tensors the version
//                                      it made introduced (not for imports: the checkpoint is
//                                      its own file), and artifacts/peft/: the version as a
//                                      PEFT adapter where scion exports one without merging
//                                      ancestors (needs the spec); written once
//     test                             metrics failure_rate.<test>, cases.<test>,
//                                      violations.<assertion>, at the run's end
//     eval (one per `scion eval` result) metrics: the numeric metrics (accuracy, macro_f1,
//                                      per_class.<label>.f1, perplexity, ...)
//   test and eval runs are linked to the run that made the version they judged
//   (tag mlflow.parentRunId), so MLflow nests them under it.
//   Tags: scion.model, scion.parent, scion.method, scion.recipe_hash, scion.run, scion.kind,
//   scion.status, scion.host, mlflow.runName.
#pragma once

#include <filesystem>
#include <string>

#include "lineage/store.h"
#include "spec/workspace.h"

namespace scion::workbench {

struct MlflowExportSummary {
  std::string experiment_id;
  std::size_t runs = 0;           // MLflow runs written (training, test and eval runs)
  std::size_t new_runs = 0;       // of them, not in DIR before
  std::size_t metric_points = 0;  // lines over all metric files
  std::size_t params = 0;
  std::size_t artifacts = 0;  // artifact files and folders written now
};

// `workspace` (may be null) lets PEFT folders be exported. Errors: `dir` is a file, or a
// folder that is neither empty nor an MLflow tracking root (no 0/meta.yaml); write errors.
Result<MlflowExportSummary> export_runs_mlflow(lineage::LineageStore& store,
                                               const spec::Workspace* workspace,
                                               const std::filesystem::path& dir,
                                               const std::string& experiment_name);

}  // namespace scion::workbench
