#include <algorithm>
#include <catch2/catch.hpp>
#include <numeric>

#include "base/seeded_rng.h"
#include "runtime/data/shuffle.h"

using namespace scion;
using base::RngPurpose;
using base::SeededRng;

namespace {
std::vector<std::int64_t> iota_rows(std::int64_t n) {
  std::vector<std::int64_t> rows(static_cast<std::size_t>(n));
  std::iota(rows.begin(), rows.end(), std::int64_t{0});
  return rows;
}
}  // namespace

TEST_CASE("the generator is SplitMix64", "[data][shuffle]") {
  // The first SplitMix64 output from state 0 in the published reference implementation.
  CHECK(base::mix64(0x9e3779b97f4a7c15ULL) == 0xe220a8397b1dcdafULL);
  // Golden values of this implementation: any change here changes every data order.
  SeededRng rng(0, RngPurpose::kEpochOrder, 0);
  CHECK(rng.next() == 0x657e0be0e89a4916ULL);
  CHECK(rng.next() == 0x4550574bbd163352ULL);
}

TEST_CASE("below() is in range and uniform; uniform01() in [0, 1)", "[data][shuffle]") {
  SeededRng rng(123, RngPurpose::kMasking, 0);
  std::vector<int> counts(7, 0);
  constexpr int kDraws = 70000;
  for (int i = 0; i < kDraws; ++i) {
    const std::uint64_t x = rng.below(7);
    REQUIRE(x < 7);
    ++counts[x];
  }
  // Each count is Binomial(70000, 1/7): mean 10000, sd ~93; 500 is over 5 sd.
  for (int c : counts) CHECK(std::abs(c - 10000) < 500);
  double sum = 0;
  for (int i = 0; i < kDraws; ++i) {
    const double u = rng.uniform01();
    REQUIRE(u >= 0.0);
    REQUIRE(u < 1.0);
    sum += u;
  }
  CHECK(sum / kDraws == Approx(0.5).margin(0.01));
}

TEST_CASE("epoch order: golden, reproducible, different per epoch and seed", "[data][shuffle]") {
  const auto rows = iota_rows(10);
  // Golden orders computed by this implementation; the same on every platform.
  CHECK(data::epoch_order(rows, 42, 0) == std::vector<std::int64_t>{4, 9, 5, 2, 3, 8, 0, 6, 7, 1});
  CHECK(data::epoch_order(rows, 42, 1) == std::vector<std::int64_t>{2, 4, 0, 9, 7, 6, 8, 5, 3, 1});
  CHECK(data::epoch_order(rows, 42, 0) == data::epoch_order(rows, 42, 0));
  CHECK(data::epoch_order(rows, 43, 0) != data::epoch_order(rows, 42, 0));
}

TEST_CASE("a shuffle is a permutation of its input", "[data][shuffle]") {
  for (std::int64_t n : {0, 1, 2, 3, 17, 1000}) {
    for (std::uint64_t seed : {0ULL, 1ULL, 0xdeadbeefULL}) {
      std::vector<std::int64_t> rows(static_cast<std::size_t>(n));
      for (std::int64_t i = 0; i < n; ++i) rows[static_cast<std::size_t>(i)] = 3 * i + 1;
      auto order = data::epoch_order(rows, seed, 5);
      std::sort(order.begin(), order.end());
      CHECK(order == rows);
    }
  }
}

TEST_CASE("every position is equally likely for every item", "[data][shuffle]") {
  // 4 items, 24000 shuffles: each (item, position) count is Binomial(24000, 1/4), mean 6000,
  // sd ~67; 400 is 6 sd, so only a biased shuffle fails.
  std::array<std::array<int, 4>, 4> counts{};
  SeededRng rng(9, RngPurpose::kEpochOrder, 0);
  for (int t = 0; t < 24000; ++t) {
    std::vector<std::int64_t> items{0, 1, 2, 3};
    data::seeded_shuffle(items, rng);
    for (std::size_t pos = 0; pos < 4; ++pos) ++counts[static_cast<std::size_t>(items[pos])][pos];
  }
  for (const auto& item : counts)
    for (int c : item) CHECK(std::abs(c - 6000) < 400);
}

TEST_CASE("validation split: sizes, determinism, disjoint cover", "[data][shuffle]") {
  auto split = data::split_validation(10, 0.2f, 7);
  REQUIRE(split);
  CHECK(split->validation == std::vector<std::int64_t>{1, 2});  // golden for seed 7
  CHECK(split->train == std::vector<std::int64_t>{0, 3, 4, 5, 6, 7, 8, 9});

  struct Case {
    std::int64_t rows;
    float fraction;
    std::size_t validation;
  };
  for (Case c : {Case{100, 0.1f, 10}, Case{101, 0.25f, 25}, Case{10, 0.01f, 1}, Case{3, 0.9f, 2},
                 Case{2, 0.5f, 1}, Case{5, 0.0f, 0}}) {
    auto s = data::split_validation(c.rows, c.fraction, 1);
    REQUIRE(s);
    CHECK(s->validation.size() == c.validation);
    CHECK(static_cast<std::int64_t>(s->train.size() + s->validation.size()) == c.rows);
    std::vector<std::int64_t> all = s->train;
    all.insert(all.end(), s->validation.begin(), s->validation.end());
    std::sort(all.begin(), all.end());
    CHECK(all == iota_rows(c.rows));
    CHECK(std::is_sorted(s->train.begin(), s->train.end()));
  }
  CHECK(data::split_validation(100, 0.3f, 5)->validation ==
        data::split_validation(100, 0.3f, 5)->validation);
  CHECK(data::split_validation(100, 0.3f, 5)->validation !=
        data::split_validation(100, 0.3f, 6)->validation);
}

TEST_CASE("validation split: errors", "[data][shuffle]") {
  auto one = data::split_validation(1, 0.1f, 0);
  REQUIRE_FALSE(one);
  CHECK(one.status().message() ==
        "the dataset has 1 row(s); a validation split needs at least 2 rows (set "
        "training.validation_split to 0 or add rows)");
  auto whole = data::split_validation(10, 1.0f, 0);
  REQUIRE_FALSE(whole);
  CHECK(whole.status().message() == "training.validation_split is 1; it must be in [0, 1)");
}
