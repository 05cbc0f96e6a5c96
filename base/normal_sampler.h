// NormalSampler: standard normal deviates from a SeededRng, for parameter initialisation.
// std::normal_distribution is not used: libstdc++, libc++ and MSVC use different
// algorithms, so the same seed would give other parameters (and other trained models)
// with another standard library.
//
// Method: Box–Muller. Each pair of uniforms u1 = 1 - uniform01() in (0, 1] and
// u2 = uniform01() gives z0 = r·cos(2π·u2) and z1 = r·sin(2π·u2) with
// r = sqrt(-2·ln u1), returned in that order, in double. Callers round to float. Only
// sqrt is exactly specified by IEEE 754; log, cos and sin come from the C library, whose
// double results may differ in the last bit between libraries, which moves a float
// rounded from them only when the double lies within that bit of a float rounding
// boundary (about one value in 2^29). Not thread-safe; a small value.
#pragma once

#include <cmath>
#include <numbers>

#include "base/seeded_rng.h"

namespace scion::base {

class NormalSampler {
 public:
  explicit NormalSampler(SeededRng rng) : rng_(rng) {}

  // A standard normal deviate (mean 0, variance 1).
  double next() {
    if (has_spare_) {
      has_spare_ = false;
      return spare_;
    }
    const double u1 = 1.0 - rng_.uniform01();  // (0, 1]: log is finite
    const double u2 = rng_.uniform01();
    const double r = std::sqrt(-2.0 * std::log(u1));
    const double angle = 2.0 * std::numbers::pi * u2;
    spare_ = r * std::sin(angle);
    has_spare_ = true;
    return r * std::cos(angle);
  }

 private:
  SeededRng rng_;
  double spare_ = 0.0;
  bool has_spare_ = false;
};

}  // namespace scion::base
