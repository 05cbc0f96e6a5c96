#include "runtime/metrics/classification_metrics.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "runtime/metrics/ratio.h"

namespace scion::runtime {
namespace {

constexpr int kCalibrationBins = 15;

// Expected calibration error of the predicted classes' confidences.
double calibration_error(std::span<const double> confidence, std::span<const char> correct) {
  std::vector<double> conf_sum(kCalibrationBins, 0.0), hits(kCalibrationBins, 0.0);
  std::vector<std::int64_t> count(kCalibrationBins, 0);
  for (std::size_t i = 0; i < confidence.size(); ++i) {
    // Bins (k/15, (k+1)/15]: a confidence of exactly 0 goes to the first.
    int bin = static_cast<int>(std::ceil(confidence[i] * kCalibrationBins)) - 1;
    bin = std::clamp(bin, 0, kCalibrationBins - 1);
    conf_sum[bin] += confidence[i];
    hits[bin] += correct[i] != 0 ? 1.0 : 0.0;
    ++count[bin];
  }
  double ece = 0;
  for (int b = 0; b < kCalibrationBins; ++b)
    if (count[b] > 0)
      ece += std::fabs(hits[b] - conf_sum[b]) / static_cast<double>(confidence.size());
  return ece;
}

// Mann–Whitney: the share of (positive, negative) pairs the positive scores above, ties half.
std::optional<double> roc_auc(std::span<const std::int32_t> truth, std::span<const double> score) {
  std::vector<std::size_t> order(truth.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(),
            [&](std::size_t a, std::size_t b) { return score[a] < score[b]; });
  double rank_sum = 0;  // ranks (1-based, ties averaged) of the positives
  std::int64_t positives = 0;
  for (std::size_t i = 0; i < order.size();) {
    std::size_t j = i;
    while (j < order.size() && score[order[j]] == score[order[i]]) ++j;
    const double rank = (static_cast<double>(i + 1) + static_cast<double>(j)) / 2.0;
    for (std::size_t k = i; k < j; ++k)
      if (truth[order[k]] == 1) {
        rank_sum += rank;
        ++positives;
      }
    i = j;
  }
  const std::int64_t negatives = static_cast<std::int64_t>(truth.size()) - positives;
  if (positives == 0 || negatives == 0) return std::nullopt;
  const double p = static_cast<double>(positives);
  return (rank_sum - p * (p + 1) / 2.0) / (p * static_cast<double>(negatives));
}

// Gorodkin's multiclass MCC from the confusion matrix.
double matthews(const std::vector<std::vector<std::int64_t>>& confusion) {
  const std::size_t k = confusion.size();
  double correct = 0, total = 0, pt = 0, pp = 0, tt = 0;
  std::vector<double> t(k, 0), p(k, 0);
  for (std::size_t a = 0; a < k; ++a)
    for (std::size_t b = 0; b < k; ++b) {
      const double n = static_cast<double>(confusion[a][b]);
      t[a] += n;
      p[b] += n;
      total += n;
      if (a == b) correct += n;
    }
  for (std::size_t a = 0; a < k; ++a) {
    pt += p[a] * t[a];
    pp += p[a] * p[a];
    tt += t[a] * t[a];
  }
  const double den = std::sqrt((total * total - pp) * (total * total - tt));
  return den == 0 ? 0.0 : (correct * total - pt) / den;
}

}  // namespace

std::int32_t argmax(std::span<const float> values) {
  return static_cast<std::int32_t>(std::max_element(values.begin(), values.end()) - values.begin());
}

std::vector<float> softmax(std::span<const float> logits) {
  std::vector<float> p(logits.size());
  if (logits.empty()) return p;
  const double top = *std::max_element(logits.begin(), logits.end());
  double sum = 0;
  for (std::size_t k = 0; k < logits.size(); ++k) sum += std::exp(double(logits[k]) - top);
  for (std::size_t k = 0; k < logits.size(); ++k)
    p[k] = static_cast<float>(std::exp(double(logits[k]) - top) / sum);
  return p;
}

std::vector<float> sigmoid(std::span<const float> logits) {
  std::vector<float> p;
  for (float z : logits) p.push_back(static_cast<float>(1.0 / (1.0 + std::exp(-double(z)))));
  return p;
}

ClassificationMetrics classification_metrics(const std::vector<std::string>& labels,
                                             std::span<const std::int32_t> truth,
                                             std::span<const float> probabilities) {
  const std::size_t k = labels.size();
  ClassificationMetrics m;
  m.rows = static_cast<std::int64_t>(truth.size());
  m.confusion.assign(k, std::vector<std::int64_t>(k, 0));
  std::int64_t correct = 0;
  std::vector<double> confidence, positive_score;
  std::vector<char> hit;
  for (std::size_t i = 0; i < truth.size(); ++i) {
    const std::span<const float> p = probabilities.subspan(i * k, k);
    const std::int32_t predicted = argmax(p);
    ++m.confusion[static_cast<std::size_t>(truth[i])][static_cast<std::size_t>(predicted)];
    correct += truth[i] == predicted;
    confidence.push_back(p[static_cast<std::size_t>(predicted)]);
    hit.push_back(truth[i] == predicted ? 1 : 0);
    if (k == 2) positive_score.push_back(p[1]);
  }
  m.accuracy = ratio(static_cast<double>(correct), static_cast<double>(m.rows));
  m.micro_f1 = m.accuracy;
  double f1_sum = 0, weighted_sum = 0;
  std::int64_t averaged = 0, supported = 0;
  for (std::size_t c = 0; c < k; ++c) {
    ClassMetrics cm{.label = labels[c]};
    for (std::size_t j = 0; j < k; ++j) {
      cm.support += m.confusion[c][j];
      cm.predicted += m.confusion[j][c];
    }
    const double hits = static_cast<double>(m.confusion[c][c]);
    cm.precision = ratio(hits, static_cast<double>(cm.predicted));
    cm.recall = ratio(hits, static_cast<double>(cm.support));
    const double pr = cm.precision + cm.recall;
    cm.f1 = pr == 0 ? 0.0 : 2 * cm.precision * cm.recall / pr;
    if (cm.support > 0 || cm.predicted > 0) {
      f1_sum += cm.f1;
      ++averaged;
    }
    weighted_sum += cm.f1 * static_cast<double>(cm.support);
    supported += cm.support;
    m.per_class.push_back(cm);
  }
  m.macro_f1 = ratio(f1_sum, static_cast<double>(averaged));
  m.weighted_f1 = ratio(weighted_sum, static_cast<double>(supported));
  m.mcc = matthews(m.confusion);
  m.ece = calibration_error(confidence, hit);
  if (k == 2) m.roc_auc = roc_auc(truth, positive_score);
  return m;
}

}  // namespace scion::runtime
