#include "runtime/metrics/regression_metrics.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace scion::runtime {
namespace {

// Ranks from 1, ties given their mean rank.
std::vector<double> ranks(std::span<const double> x) {
  std::vector<std::size_t> order(x.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return x[a] < x[b]; });
  std::vector<double> rank(x.size());
  for (std::size_t i = 0; i < order.size();) {
    std::size_t j = i;
    while (j < order.size() && x[order[j]] == x[order[i]]) ++j;
    const double mean = (static_cast<double>(i + 1) + static_cast<double>(j)) / 2.0;
    for (std::size_t k = i; k < j; ++k) rank[order[k]] = mean;
    i = j;
  }
  return rank;
}

std::optional<double> mean_of(const std::vector<std::optional<double>>& values) {
  double sum = 0;
  int n = 0;
  for (const auto& v : values)
    if (v) {
      sum += *v;
      ++n;
    }
  if (n == 0) return std::nullopt;
  return sum / n;
}

}  // namespace

std::optional<double> pearson(std::span<const double> x, std::span<const double> y) {
  const std::size_t n = x.size();
  if (n < 2) return std::nullopt;
  const double mx = std::accumulate(x.begin(), x.end(), 0.0) / static_cast<double>(n);
  const double my = std::accumulate(y.begin(), y.end(), 0.0) / static_cast<double>(n);
  double sxy = 0, sxx = 0, syy = 0;
  for (std::size_t i = 0; i < n; ++i) {
    sxy += (x[i] - mx) * (y[i] - my);
    sxx += (x[i] - mx) * (x[i] - mx);
    syy += (y[i] - my) * (y[i] - my);
  }
  if (sxx == 0 || syy == 0) return std::nullopt;
  return sxy / std::sqrt(sxx * syy);
}

std::optional<double> spearman(std::span<const double> x, std::span<const double> y) {
  const std::vector<double> rx = ranks(x), ry = ranks(y);
  return pearson(rx, ry);
}

RegressionMetrics regression_metrics(const std::vector<std::string>& labels,
                                     std::span<const float> predictions,
                                     std::span<const float> targets) {
  const std::size_t k = labels.size();
  RegressionMetrics m;
  m.rows = static_cast<std::int64_t>(predictions.size() / k);
  double squared = 0, absolute = 0;
  std::vector<std::optional<double>> pearsons, spearmans;
  for (std::size_t o = 0; o < k; ++o) {
    std::vector<double> p, t;
    double sq = 0, ab = 0;
    for (std::int64_t r = 0; r < m.rows; ++r) {
      const std::size_t i = static_cast<std::size_t>(r) * k + o;
      p.push_back(predictions[i]);
      t.push_back(targets[i]);
      const double d = static_cast<double>(predictions[i]) - targets[i];
      sq += d * d;
      ab += std::fabs(d);
    }
    squared += sq;
    absolute += ab;
    const double rows = static_cast<double>(std::max<std::int64_t>(m.rows, 1));
    OutputMetrics om{.label = labels[o], .rmse = std::sqrt(sq / rows), .mae = ab / rows};
    om.pearson = pearson(p, t);
    om.spearman = spearman(p, t);
    pearsons.push_back(om.pearson);
    spearmans.push_back(om.spearman);
    m.per_output.push_back(om);
  }
  const double values = static_cast<double>(std::max<std::size_t>(predictions.size(), 1));
  m.mse = squared / values;
  m.rmse = std::sqrt(m.mse);
  m.mae = absolute / values;
  m.pearson = mean_of(pearsons);
  m.spearman = mean_of(spearmans);
  return m;
}

}  // namespace scion::runtime
