// Test support for the Hugging Face parity tests: the fixtures that transformers and
// tokenizers wrote once (tests/python/make_hf_fixtures.py and make_hf_bpe_fixtures.py; checked in, so no Python runs in the unit suite), and the
// comparison every parity test makes against them.
#pragma once

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <vector>

namespace scion::test {

inline const std::filesystem::path kFixtures = SCION_TEST_FIXTURES "/hf";

inline nlohmann::json read_json(const std::filesystem::path& file) {
  std::ifstream in(file);
  REQUIRE(in);
  return nlohmann::json::parse(in);
}

// fp32 end to end against transformers' fp32 (fixtures rounded to 6 significant digits):
// two layers of width 32 accumulate round-off near 1e-6; 1e-4 is the bound and
// still fails on any wrong term (a missed transpose, offset or activation moves logits
// by 1e-2 or more).
constexpr double kTolerance = 1e-4;

inline double max_difference(const std::vector<float>& got, const std::vector<double>& expected) {
  REQUIRE(got.size() == expected.size());
  double worst = 0;
  for (std::size_t i = 0; i < got.size(); ++i)
    worst = std::max(worst, std::abs(static_cast<double>(got[i]) - expected[i]));
  return worst;
}

// Rows of values, flattened in order.
inline std::vector<double> flatten(const nlohmann::json& rows) {
  std::vector<double> out;
  for (const auto& row : rows)
    for (const auto& v : row) out.push_back(v.get<double>());
  return out;
}

}  // namespace scion::test
