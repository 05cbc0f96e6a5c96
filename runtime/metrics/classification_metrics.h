// The metrics of a single-label classifier over labelled examples, from its class
// probabilities: what `scion eval` reports and stores, and what training's validation
// records (val_accuracy, val_f1, ...; spec/metric_names.h).
//
// The prediction is the most probable class (the first on ties). Accuracy; per class
// precision, recall, F1, support (true examples) and predicted count; the confusion
// matrix (rows: true class, columns: predicted). Precision of a class never predicted is
// 0, as is F1 when precision and recall are both 0. Averages (scikit-learn's, over the
// classes that occur in the data or in the predictions, so a class that neither has does
// not pull them down): macro F1, their unweighted mean; weighted F1, weighted by support;
// micro F1, from the pooled counts (equal to accuracy for a single label). MCC is the
// multiclass Matthews correlation (Gorodkin's R_K, as sklearn.metrics.matthews_corrcoef;
// 0 when undefined). ECE, the expected calibration error: the confidences (the predicted
// class's probability) in 15 equal-width bins over [0, 1], Σ_bins |accuracy − mean
// confidence| · share of examples. ROC-AUC for two classes only, class 1 positive: the
// probability that a positive example scores above a negative one (ties count half);
// absent when one class has no example. Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace scion::runtime {

struct ClassMetrics {
  std::string label;
  double precision = 0;
  double recall = 0;
  double f1 = 0;
  std::int64_t support = 0;    // examples whose true label this is
  std::int64_t predicted = 0;  // examples the model gave this label
};

struct ClassificationMetrics {
  std::int64_t rows = 0;
  double accuracy = 0;
  double macro_f1 = 0;
  double micro_f1 = 0;
  double weighted_f1 = 0;
  double mcc = 0;
  double ece = 0;
  std::optional<double> roc_auc;                     // two classes, both present
  std::vector<ClassMetrics> per_class;               // the head's label order
  std::vector<std::vector<std::int64_t>> confusion;  // [true label][predicted label]
};

// `probabilities` holds truth.size() rows of labels.size() values.
// REQUIRES: every truth index < labels.size().
ClassificationMetrics classification_metrics(const std::vector<std::string>& labels,
                                             std::span<const std::int32_t> truth,
                                             std::span<const float> probabilities);

// Index of the largest of `values` (the first on ties).
std::int32_t argmax(std::span<const float> values);

// Softmax of one row of K logits, computed in double for stability.
std::vector<float> softmax(std::span<const float> logits);

// The logistic sigmoid of each logit (a multi-label head's label probabilities), in double.
std::vector<float> sigmoid(std::span<const float> logits);

}  // namespace scion::runtime
