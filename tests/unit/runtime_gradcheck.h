// Finite-difference gradient checking shared by the runtime tests.
//
// The loss is a double-precision sum of fp32 kernel outputs weighted by fixed random
// coefficients, so every output element has a nonzero gradient. Central differences
// with step h = 1e-2 have truncation error O(h²) ≈ 1e-4 relative for these smooth
// functions, and fp32 round-off in the loss of about 1e-7·|L|/h ≈ 1e-5·|L|; the default
// tolerance |analytic − numeric| ≤ 2e-3 + 2e-2·|numeric| leaves an order of magnitude of
// margin over both while still failing on any wrong term (which errs by O(1)).
#pragma once

#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <vector>

namespace scion::test {

inline std::vector<float> random_vector(std::size_t n, std::uint64_t seed, float scale = 1.0f) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal(0.0f, scale);
  std::vector<float> v(n);
  for (float& x : v) x = normal(rng);
  return v;
}

inline double weighted_sum(const float* out, const std::vector<float>& weights) {
  double sum = 0.0;
  for (std::size_t i = 0; i < weights.size(); ++i) sum += static_cast<double>(out[i]) * weights[i];
  return sum;
}

struct GradTolerance {
  double atol = 2e-3;
  double rtol = 2e-2;
};

// Checks analytic[i] against a central difference of loss() in x[i], for every i (or a
// strided sample of at most `max_checks` entries for large tensors).
inline void check_gradient(const std::string& what, const std::function<double()>& loss, float* x,
                           std::size_t n, const float* analytic, GradTolerance tol = {},
                           std::size_t max_checks = 400, float h = 1e-2f) {
  const std::size_t stride = n > max_checks ? n / max_checks + 1 : 1;
  int failures = 0;
  for (std::size_t i = 0; i < n; i += stride) {
    const float saved = x[i];
    x[i] = saved + h;
    const double plus = loss();
    x[i] = saved - h;
    const double minus = loss();
    x[i] = saved;
    const double numeric = (plus - minus) / (2.0 * h);
    const double error = std::fabs(analytic[i] - numeric);
    if (error > tol.atol + tol.rtol * std::fabs(numeric)) {
      if (failures++ < 5)
        UNSCOPED_INFO(what << "[" << i << "]: analytic " << analytic[i] << " numeric " << numeric);
    }
  }
  INFO(what);
  CHECK(failures == 0);
}

}  // namespace scion::test
