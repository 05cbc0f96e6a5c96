// The metrics of a multi-label head over examples with label sets: what `scion eval`
// reports and stores, and training's val_f1, val_micro_f1 and val_subset_accuracy
// (spec/metric_names.h).
//
// A label is predicted when its probability is at least the head's threshold. Per label:
// precision, recall, F1, support (examples that have it) and predicted count. Micro F1
// from the counts pooled over labels, 2·TP / (2·TP + FP + FN); macro F1, the mean of the
// per-label F1 over the labels that occur in the data or in the predictions (as the
// single-label macro F1); subset accuracy, the share of examples whose predicted set is
// exactly their set; Hamming loss, the share of (example, label) decisions that are
// wrong. Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "runtime/metrics/classification_metrics.h"

namespace scion::runtime {

struct MultiLabelMetrics {
  std::int64_t rows = 0;
  float threshold = 0.5f;
  double micro_f1 = 0;
  double macro_f1 = 0;
  double subset_accuracy = 0;
  double hamming_loss = 0;
  std::vector<ClassMetrics> per_label;  // the head's label order
};

// `probabilities` and `truth` (1 where the example has the label, else 0) hold rows ×
// labels.size() values, row-major. REQUIRES: equal sizes, a multiple of labels.size() > 0.
MultiLabelMetrics multi_label_metrics(const std::vector<std::string>& labels,
                                      std::span<const float> probabilities,
                                      std::span<const float> truth, float threshold);

}  // namespace scion::runtime
