#include "spec/metric_names.h"

namespace scion::spec {

std::vector<std::string_view> validation_metrics(Objective objective, HeadTask task, int labels) {
  if (objective != Objective::kClassification) return {"val_loss"};
  switch (task) {
    case HeadTask::kClassification: {
      std::vector<std::string_view> names = {"val_loss",     "val_accuracy",    "val_f1",
                                             "val_micro_f1", "val_weighted_f1", "val_mcc",
                                             "val_ece"};
      if (labels == 2) names.push_back("val_auc");
      return names;
    }
    case HeadTask::kRegression:
      return {"val_loss", "val_rmse", "val_mae", "val_pearson", "val_spearman"};
    case HeadTask::kMultiLabel:
      return {"val_loss", "val_f1", "val_micro_f1", "val_subset_accuracy"};
    case HeadTask::kTokenClassification:
      return {"val_loss", "val_f1", "val_precision", "val_recall", "val_accuracy"};
  }
  return {"val_loss"};
}

bool lower_is_better(std::string_view metric) {
  return metric == "val_loss" || metric == "val_rmse" || metric == "val_mae" || metric == "val_ece";
}

}  // namespace scion::spec
