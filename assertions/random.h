// SeededRandom: the one pseudo-random source of behavioural tests.
//
// Test cases and perturbations must be identical on every machine, compiler and standard
// library for a given seed, so they never use std:: distributions (whose outputs are
// implementation-defined). This is SplitMix64 (Steele, Lea and Flood, 2014) with an
// unbiased bounded draw. A SeededRandom is a small value; copy it to fork a stream. Not
// thread-safe; give each thread its own.
#pragma once

#include <cstdint>
#include <string_view>

namespace scion::assertions {

class SeededRandom {
 public:
  explicit SeededRandom(std::uint64_t seed) : state_(seed) {}

  std::uint64_t next() {
    std::uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }

  // Uniform in [0, bound). REQUIRES: bound > 0.
  std::uint64_t below(std::uint64_t bound) {
    // Rejection keeps the draw unbiased: discard the top partial block of 2^64 values.
    const std::uint64_t limit = ~std::uint64_t{0} - (~std::uint64_t{0} % bound);
    std::uint64_t x = next();
    while (x >= limit) x = next();
    return x % bound;
  }

  // Uniform in [0, 1) with 53 random bits.
  double unit() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }

 private:
  std::uint64_t state_;
};

// A stable 64-bit hash (FNV-1a) for deriving per-test and per-case seeds from names.
inline std::uint64_t stable_hash(std::string_view text) {
  std::uint64_t h = 0xCBF29CE484222325ull;
  for (unsigned char c : text) {
    h ^= c;
    h *= 0x100000001B3ull;
  }
  return h;
}

// Combines a seed with a stream index so that case i of a test gets its own stream.
inline std::uint64_t derive_seed(std::uint64_t seed, std::uint64_t stream) {
  SeededRandom mix(seed ^ (stream * 0xD1B54A32D192ED03ull));
  return mix.next();
}

}  // namespace scion::assertions
