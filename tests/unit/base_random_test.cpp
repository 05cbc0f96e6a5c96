#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "base/normal_sampler.h"
#include "base/seeded_rng.h"
#include "base/stable_hash.h"

using namespace scion::base;

namespace {
std::uint32_t float_bits(float f) {
  std::uint32_t bits;
  std::memcpy(&bits, &f, sizeof bits);
  return bits;
}
}  // namespace

TEST_CASE("the generator is SplitMix64, and splitmix64(x) is its first output from state x",
          "[base][rng]") {
  // The first output from state 0 in the published reference implementation.
  auto rng = SeededRng::from_state(0);
  CHECK(rng.next() == 0xe220a8397b1dcdafULL);
  CHECK(splitmix64(0) == 0xe220a8397b1dcdafULL);
  CHECK(mix64(kGoldenGamma) == 0xe220a8397b1dcdafULL);
  for (std::uint64_t x : {1ULL, 42ULL, 0xdeadbeefULL, ~0ULL}) {
    auto from_x = SeededRng::from_state(x);
    CHECK(from_x.next() == splitmix64(x));
  }
}

TEST_CASE("stable_hash is FNV-1a", "[base][hash]") {
  CHECK(stable_hash("") == 0xcbf29ce484222325ULL);
  CHECK(stable_hash("a") == 0xaf63dc4c8601ec8cULL);  // the published FNV-1a test vector
}

TEST_CASE("normal deviates are fixed numbers for a seed, the same on every standard library",
          "[base][normal]") {
  // Parameter initialisation rounds 0.02·z to float; these bit patterns are what a
  // normal(0, 0.02) tensor starts with for stream (1, kParameterInit, 0). They must not
  // change: every stored model trained from scratch depends on them.
  NormalSampler normal(SeededRng(1, RngPurpose::kParameterInit, 0));
  CHECK(float_bits(static_cast<float>(0.02 * normal.next())) == 0xbc30511du);
  CHECK(float_bits(static_cast<float>(0.02 * normal.next())) == 0xbc919fffu);
  CHECK(float_bits(static_cast<float>(0.02 * normal.next())) == 0x3bfd8164u);
  CHECK(float_bits(static_cast<float>(0.02 * normal.next())) == 0xbb1308c4u);
}

TEST_CASE("normal deviates have mean 0 and variance 1", "[base][normal]") {
  NormalSampler normal(SeededRng(7, RngPurpose::kParameterInit, 3));
  const int n = 200000;
  double sum = 0, sum_sq = 0;
  int beyond_two = 0;
  for (int i = 0; i < n; ++i) {
    const double z = normal.next();
    REQUIRE(std::isfinite(z));
    sum += z;
    sum_sq += z * z;
    beyond_two += std::abs(z) > 2.0;
  }
  const double mean = sum / n, variance = sum_sq / n - mean * mean;
  CHECK(std::abs(mean) < 0.01);           // standard error 0.0022
  CHECK(std::abs(variance - 1.0) < 0.02);  // standard error 0.0032
  // P(|z| > 2) = 0.0455 for a normal; a uniform or a sum of few uniforms would miss it.
  CHECK(std::abs(static_cast<double>(beyond_two) / n - 0.0455) < 0.003);
}
