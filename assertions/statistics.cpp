// Wilson intervals, McNemar's exact test and a paired bootstrap (assertions/statistics.h).
#include "assertions/statistics.h"

#include <fmt/format.h>

#include <algorithm>
#include <cassert>
#include <cmath>
#include <numbers>
#include <vector>

#include "base/seeded_rng.h"

namespace scion::assertions {
namespace {

// The standard normal's 97.5% quantile, scipy.stats.norm.isf(0.025): the z of a
// two-sided 95% interval.
constexpr double kZ95 = 1.959963984540054;

// log P(X = k) for X ~ Binomial(n, 1/2). lgamma keeps it finite where C(n, k) overflows a
// double (n above about 1030).
double log_binomial_half_pmf(std::size_t k, std::size_t n) {
  const double nd = static_cast<double>(n), kd = static_cast<double>(k);
  return std::lgamma(nd + 1.0) - std::lgamma(kd + 1.0) - std::lgamma(nd - kd + 1.0) -
         nd * std::numbers::ln2;
}

// log P(X <= m) for X ~ Binomial(n, 1/2), REQUIRES m <= n / 2: the pmf rises up to m, so
// the sum is P(X = m) times a sum of ratios P(X = i) / P(X = m), each at most 1 and got
// from the next by P(X = i - 1) / P(X = i) = i / (n - i + 1). Nothing overflows or
// underflows, and the sum stops once a term no longer changes it.
double log_binomial_half_cdf(std::size_t m, std::size_t n) {
  double ratio = 1.0, ratio_sum = 1.0;
  for (std::size_t i = m; i > 0; --i) {
    ratio *= static_cast<double>(i) / static_cast<double>(n - i + 1);
    ratio_sum += ratio;
    if (ratio < ratio_sum * 1e-17) break;
  }
  return log_binomial_half_pmf(m, n) + std::log(ratio_sum);
}

// The q-quantile of sorted values, interpolated linearly at position q (size - 1).
double sorted_quantile(const std::vector<double>& sorted, double q) {
  const double position = q * static_cast<double>(sorted.size() - 1);
  const std::size_t below = static_cast<std::size_t>(std::floor(position));
  if (below + 1 >= sorted.size()) return sorted.back();
  const double fraction = position - static_cast<double>(below);
  return sorted[below] + (sorted[below + 1] - sorted[below]) * fraction;
}

double mean(const std::vector<double>& values) {
  double sum = 0.0;
  for (double v : values) sum += v;
  return sum / static_cast<double>(values.size());
}

}  // namespace

Interval wilson_interval(std::size_t k, std::size_t n) {
  assert(k <= n);
  if (n == 0) return {0.0, 1.0};
  const double nd = static_cast<double>(n);
  const double p = static_cast<double>(k) / nd;
  const double z2 = kZ95 * kZ95;
  const double denominator = 1.0 + z2 / nd;
  const double centre = (p + z2 / (2.0 * nd)) / denominator;
  const double half_width =
      kZ95 * std::sqrt(p * (1.0 - p) / nd + z2 / (4.0 * nd * nd)) / denominator;
  // At k = 0 and k = n the bound is 0 or 1 exactly; rounding must not push it outside.
  return {std::max(0.0, centre - half_width), std::min(1.0, centre + half_width)};
}

double mcnemar_exact_p_value(std::size_t b, std::size_t c) {
  const std::size_t n = b + c;
  if (2 * std::min(b, c) >= n) return 1.0;  // b = c (or none): the tail holds half or more
  const double log_p = std::numbers::ln2 + log_binomial_half_cdf(std::min(b, c), n);
  return std::min(1.0, std::exp(log_p));
}

Result<BootstrapInterval> paired_bootstrap_mean_difference(std::span<const double> first,
                                                           std::span<const double> second,
                                                           std::size_t resamples,
                                                           std::uint64_t seed) {
  if (first.size() != second.size() || first.empty() || resamples == 0)
    return invalid_argument(fmt::format(
        "a paired bootstrap needs the same number of scores on each side, at least one pair "
        "and at least one resample; it got {} and {} scores and {} resamples",
        first.size(), second.size(), resamples));
  std::vector<double> differences(first.size());
  for (std::size_t i = 0; i < first.size(); ++i) differences[i] = second[i] - first[i];
  base::SeededRng rng = base::SeededRng::from_state(seed);
  std::vector<double> statistics(resamples);
  for (double& statistic : statistics) {
    double sum = 0.0;
    for (std::size_t i = 0; i < differences.size(); ++i)
      sum += differences[rng.below(differences.size())];
    statistic = sum / static_cast<double>(differences.size());
  }
  std::sort(statistics.begin(), statistics.end());
  const double tail = (1.0 - kConfidenceLevel) / 2.0;
  return BootstrapInterval{
      .mean_difference = mean(differences),
      .interval = {sorted_quantile(statistics, tail), sorted_quantile(statistics, 1.0 - tail)},
      .resamples = resamples};
}

}  // namespace scion::assertions
