// Wilson intervals, McNemar's exact test and the paired bootstrap (assertions/statistics.h)
// against values computed outside scion: statsmodels 0.15.0
// proportion_confint(k, n, method='wilson'), scipy 1.17.1 binomtest(b, b + c).pvalue
// (checked against the exact sum 2 * sum(math.comb(n, i) for i <= min(b, c)) / 2**n with
// fractions.Fraction), and a Python SplitMix64 with numpy.percentile for the bootstrap.
#include <catch2/catch.hpp>
#include <vector>

#include "assertions/statistics.h"

using namespace scion::assertions;

namespace {

// 1e-9 relative: the references are doubles from other code; both sides round differently
// in the last few bits (lgamma here, exact sums there).
bool close(double got, double expected) {
  return got == Approx(expected).epsilon(1e-9).margin(1e-300);
}

}  // namespace

TEST_CASE("wilson_interval agrees with statsmodels' proportion_confint(method='wilson')") {
  struct Row {
    std::size_t k, n;
    double low, high;
  };
  const std::vector<Row> rows = {
      {0, 1, 0.0, 0.7934506856227627},
      {0, 20, 0.0, 0.1611251580528194},
      {20, 20, 0.8388748419471804, 0.9999999999999999},
      {3, 40, 0.025836025774588184, 0.1986423352431055},
      {7, 40, 0.0874541374603592, 0.3194999033178772},
      {1, 2, 0.09453120573423068, 0.9054687942657693},
      {50, 100, 0.4038315303659956, 0.5961684696340044},
      {123, 4567, 0.022620022313028024, 0.032039816815401245},
  };
  for (const Row& r : rows) {
    const Interval got = wilson_interval(r.k, r.n);
    INFO(r.k << " of " << r.n << ": [" << got.low << ", " << got.high << "]");
    CHECK(got.low == Approx(r.low).margin(1e-9));
    CHECK(got.high == Approx(r.high).margin(1e-9));
    CHECK(got.low >= 0.0);
    CHECK(got.high <= 1.0);
  }
}

TEST_CASE("wilson_interval of no cases is the whole of [0, 1]") {
  const Interval got = wilson_interval(0, 0);
  CHECK(got.low == 0.0);
  CHECK(got.high == 1.0);
}

TEST_CASE("mcnemar_exact_p_value agrees with scipy's binomtest on the discordant pairs") {
  struct Row {
    std::size_t b, c;
    double p;
  };
  const std::vector<Row> rows = {
      {0, 0, 1.0},  // nothing tells the sides apart
      {0, 1, 1.0},
      {2, 3, 1.0},
      {4, 4, 1.0},
      {0, 5, 0.0625},   // 2 / 2^5
      {1, 5, 0.21875},  // 2 * 7 / 2^6
      {5, 1, 0.21875},
      {0, 10, 0.001953125},
      {3, 17, 0.0025768280029296875},
      {10, 30, 0.0022214337732293643},
      {400, 600, 2.7284641560660184e-10},      // the exact sum; scipy's ...5947e-10
      {4800, 5200, 6.593515598672442e-05},     // the exact sum; scipy's ...8672343e-05
      {12, 1000, 1.0406496159144859e-277},     // 2^1012 overflows a double
      {45000, 55000, 8.600341645712794e-220},  // scipy only
  };
  for (const Row& r : rows) {
    const double got = mcnemar_exact_p_value(r.b, r.c);
    INFO("b = " << r.b << ", c = " << r.c << ": p = " << got);
    CHECK(close(got, r.p));
  }
}

TEST_CASE("paired_bootstrap_mean_difference matches a Python SplitMix64 and numpy.percentile") {
  const std::vector<double> first = {0.1, 0.5, 0.9, 0.3}, second = {0.4, 0.5, 0.7, 0.9};
  auto got = paired_bootstrap_mean_difference(first, second, 1000, 42);
  REQUIRE(got.is_ok());
  CHECK(got->mean_difference == Approx(0.175).margin(1e-12));
  CHECK(got->interval.low == Approx(-0.15).margin(1e-12));
  CHECK(got->interval.high == Approx(0.45).margin(1e-12));
  CHECK(got->resamples == 1000);
  auto again = paired_bootstrap_mean_difference(first, second, 1000, 42);
  REQUIRE(again.is_ok());
  CHECK(again->interval.low == got->interval.low);
  CHECK(again->interval.high == got->interval.high);
}

TEST_CASE("paired_bootstrap_mean_difference of constant differences is that constant") {
  const std::vector<double> first = {1.0, 2.0, 3.0}, second = {1.5, 2.5, 3.5};
  auto got = paired_bootstrap_mean_difference(first, second, 200, 7);
  REQUIRE(got.is_ok());
  CHECK(got->interval.low == Approx(0.5));
  CHECK(got->interval.high == Approx(0.5));
}

TEST_CASE("paired_bootstrap_mean_difference refuses unpaired or empty scores") {
  const std::vector<double> three = {1.0, 2.0, 3.0}, two = {1.0, 2.0}, none;
  auto unpaired = paired_bootstrap_mean_difference(three, two, 100, 1);
  REQUIRE_FALSE(unpaired.is_ok());
  CHECK(unpaired.status().message().find("got 3 and 2 scores") != std::string::npos);
  CHECK_FALSE(paired_bootstrap_mean_difference(none, none, 100, 1).is_ok());
  CHECK_FALSE(paired_bootstrap_mean_difference(three, three, 0, 1).is_ok());
}
