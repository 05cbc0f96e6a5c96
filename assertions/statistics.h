// The statistics behind scion's behavioural verdicts: how sure a failure rate is, and
// whether two models' outcomes on the same cases differ by more than noise.
//
// - wilson_interval: the Wilson score interval (Wilson 1927) of a proportion k/n at 95%,
//   as statsmodels' proportion_confint(k, n, method='wilson') computes it. Unlike the
//   normal ("Wald") interval it stays inside [0, 1] and is not [0, 0] at k = 0: 0 failures
//   of 20 cases still allow a failure rate up to 16%.
// - mcnemar_exact_p_value: McNemar's exact test of paired pass/fail outcomes. Only the
//   discordant cases count: b pass on the first side only, c on the second only. Under
//   "the two sides fail alike", each discordant case goes either way with probability 1/2,
//   so p = min(1, 2 P(X <= min(b, c))), X ~ Binomial(b + c, 1/2): scipy.stats.binomtest(b,
//   b + c).pvalue.
// - paired_bootstrap_mean_difference: a percentile bootstrap interval of mean(second) -
//   mean(first) over paired scores, resampling the pairs (so each case keeps both of its
//   scores) with SeededRng, so a seed gives the same interval on every machine.
// Pure functions; thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "base/status.h"

namespace scion::assertions {

// The confidence of every interval here, and the level a p-value is called significant at.
inline constexpr double kConfidenceLevel = 0.95;
inline constexpr double kSignificanceLevel = 0.05;

struct Interval {
  double low = 0.0;
  double high = 0.0;
};

// The Wilson score 95% interval of the proportion k/n. With n = 0 nothing is known: [0, 1].
// REQUIRES: k <= n.
Interval wilson_interval(std::size_t k, std::size_t n);

// McNemar's exact two-sided p-value for b discordant pairs one way and c the other; 1 when
// b + c = 0 (no case tells the sides apart). Computed in log space, so it stays finite
// where 2^(b + c) overflows; it agrees with scipy to 1e-12 relative up to b + c = 1,000
// and 2e-10 at 100,000 (lgamma's rounding grows with the count).
double mcnemar_exact_p_value(std::size_t b, std::size_t c);

struct BootstrapInterval {
  double mean_difference = 0.0;  // mean(second) - mean(first) over all the pairs
  Interval interval;             // its 2.5% and 97.5% percentiles over the resamples
  std::size_t resamples = 0;
};

// Resamples the n pairs with replacement `resamples` times from SeededRng::from_state(seed);
// each resample's statistic is the mean of its differences second[i] - first[i]. The
// percentiles interpolate linearly between the sorted statistics (numpy's default: the
// q-quantile sits at position q (B - 1)). invalid_argument when the sides differ in length,
// hold no pair, or resamples is 0.
Result<BootstrapInterval> paired_bootstrap_mean_difference(std::span<const double> first,
                                                           std::span<const double> second,
                                                           std::size_t resamples,
                                                           std::uint64_t seed);

}  // namespace scion::assertions
