#include "runtime/metrics/multi_label_metrics.h"

#include "runtime/metrics/ratio.h"

namespace scion::runtime {

MultiLabelMetrics multi_label_metrics(const std::vector<std::string>& labels,
                                      std::span<const float> probabilities,
                                      std::span<const float> truth, float threshold) {
  const std::size_t k = labels.size();
  MultiLabelMetrics m;
  m.threshold = threshold;
  m.rows = static_cast<std::int64_t>(probabilities.size() / k);
  std::vector<std::int64_t> tp(k, 0), fp(k, 0), fn(k, 0);
  std::int64_t exact = 0, wrong = 0;
  for (std::int64_t r = 0; r < m.rows; ++r) {
    bool all_right = true;
    for (std::size_t c = 0; c < k; ++c) {
      const std::size_t i = static_cast<std::size_t>(r) * k + c;
      const bool predicted = probabilities[i] >= threshold;
      const bool actual = truth[i] >= 0.5f;
      tp[c] += predicted && actual;
      fp[c] += predicted && !actual;
      fn[c] += !predicted && actual;
      if (predicted != actual) {
        all_right = false;
        ++wrong;
      }
    }
    exact += all_right;
  }
  std::int64_t TP = 0, FP = 0, FN = 0, averaged = 0;
  double f1_sum = 0;
  for (std::size_t c = 0; c < k; ++c) {
    ClassMetrics cm{.label = labels[c], .support = tp[c] + fn[c], .predicted = tp[c] + fp[c]};
    cm.precision = ratio(static_cast<double>(tp[c]), static_cast<double>(cm.predicted));
    cm.recall = ratio(static_cast<double>(tp[c]), static_cast<double>(cm.support));
    const double pr = cm.precision + cm.recall;
    cm.f1 = pr == 0 ? 0.0 : 2 * cm.precision * cm.recall / pr;
    if (cm.support > 0 || cm.predicted > 0) {
      f1_sum += cm.f1;
      ++averaged;
    }
    TP += tp[c];
    FP += fp[c];
    FN += fn[c];
    m.per_label.push_back(cm);
  }
  m.micro_f1 = ratio(2.0 * static_cast<double>(TP), static_cast<double>(2 * TP + FP + FN));
  m.macro_f1 = ratio(f1_sum, static_cast<double>(averaged));
  m.subset_accuracy = ratio(static_cast<double>(exact), static_cast<double>(m.rows));
  m.hamming_loss =
      ratio(static_cast<double>(wrong), static_cast<double>(m.rows) * static_cast<double>(k));
  return m;
}

}  // namespace scion::runtime
