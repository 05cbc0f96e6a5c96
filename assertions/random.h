// Seeds of behavioural tests. Test cases and perturbations must be identical on every
// machine, compiler and standard library for a given seed, so they draw from
// base::SeededRng (SplitMix64), started from a seed as its raw state, and derive seeds
// from names with base::stable_hash; never from std:: distributions.
#pragma once

#include <cstdint>

#include "base/seeded_rng.h"
#include "base/stable_hash.h"

namespace scion::assertions {

// Combines a seed with a stream index so that case i of a test gets its own stream.
inline std::uint64_t derive_seed(std::uint64_t seed, std::uint64_t stream) {
  return base::splitmix64(seed ^ (stream * 0xD1B54A32D192ED03ull));
}

}  // namespace scion::assertions
