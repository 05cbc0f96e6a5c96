// The validation metrics training records, by what a model predicts, and the direction in
// which each improves.
//
// A training job validates on held-out rows (validation_split or a named `validation`
// dataset) and records these under the step (lineage run_metrics); early_stopping.metric
// and keep_best name one of them, and the loader accepts exactly the names a model's task
// records, so a recipe cannot wait on a metric that never comes. Definitions are
// runtime/evaluation/task_metrics.h's; docs/spec.md lists them.
#pragma once

#include <string_view>
#include <vector>

#include "spec/workspace.h"

namespace scion::spec {

// The metrics validation records for a model trained with `objective`, its head's `task`
// and `labels` outputs, val_loss first. val_auc only for binary classification.
std::vector<std::string_view> validation_metrics(Objective objective, HeadTask task, int labels);

// Losses, errors and calibration error improve downwards; scores upwards.
bool lower_is_better(std::string_view metric);

}  // namespace scion::spec
