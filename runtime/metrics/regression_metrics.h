// The metrics of a regression head over examples with numeric targets (K per example):
// what `scion eval` reports and stores, and training's val_rmse, val_mae, val_pearson and
// val_spearman (spec/metric_names.h).
//
// Over every value of every output: MSE, RMSE = sqrt(MSE), MAE. Per output: Pearson's r
// and Spearman's rho (Pearson's r of the ranks, ties given their mean rank, as
// scipy.stats.spearmanr), each absent when predictions or targets are constant; the
// reported pearson and spearman are their means over the outputs that have one (absent
// when none has). Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace scion::runtime {

struct OutputMetrics {
  std::string label;
  double rmse = 0;
  double mae = 0;
  std::optional<double> pearson;
  std::optional<double> spearman;
};

struct RegressionMetrics {
  std::int64_t rows = 0;
  double mse = 0;
  double rmse = 0;
  double mae = 0;
  std::optional<double> pearson;
  std::optional<double> spearman;
  std::vector<OutputMetrics> per_output;
};

// `predictions` and `targets` hold rows × labels.size() values, row-major.
// REQUIRES: equal sizes, a multiple of labels.size() > 0.
RegressionMetrics regression_metrics(const std::vector<std::string>& labels,
                                     std::span<const float> predictions,
                                     std::span<const float> targets);

// Pearson's r of two equal-length series; absent when either is constant.
std::optional<double> pearson(std::span<const double> x, std::span<const double> y);
// Spearman's rho; absent when either is constant.
std::optional<double> spearman(std::span<const double> x, std::span<const double> y);

}  // namespace scion::runtime
