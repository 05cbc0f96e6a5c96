// SeededRng: scion's one pseudo-random generator, specified exactly so that the same seed
// gives the same numbers on every platform, compiler and standard library. Every random
// decision (validation split, epoch order, masked-LM masking, dropout masks, behavioural
// test cases and perturbations, sampled tokens) draws from it or from its mixer;
// std::shuffle, std::hash and the std distributions are never used: their outputs are
// implementation-defined.
//
// Generator: SplitMix64 (Steele, Lea, Flood, "Fast splittable pseudorandom number
// generators", OOPSLA 2014): state += 0x9e3779b97f4a7c15; output = mix64(state), with
//   mix64(z): z = (z ^ z>>30) * 0xbf58476d1ce4e5b9; z = (z ^ z>>27) * 0x94d049bb133111eb;
//             return z ^ z>>31.
// splitmix64(x) = mix64(x + 0x9e3779b97f4a7c15) is the first output from state x: the
// counter-based form used to derive seeds (dropout sites, parameters) without a stream.
// Streams: each decision draws from its own stream so that, for example, the order of
// epoch 7 can be computed without replaying epochs 0..6. The stream (seed, purpose, index)
// starts from state mix64(mix64(mix64(seed) + purpose) + index), all arithmetic mod 2^64.
// Bounded integers: below(n) rejects outputs under 2^64 mod n and returns output mod n,
// which is exactly uniform. uniform01(): (output >> 11) * 2^-53, in [0, 1).
// Normal deviates: NormalSampler (base/normal_sampler.h).
// A SeededRng is a small value; copy it to fork the sequence. Not thread-safe.
#pragma once

#include <cstdint>

namespace scion::base {

// SplitMix64's increment (2^64 / golden ratio).
inline constexpr std::uint64_t kGoldenGamma = 0x9e3779b97f4a7c15ULL;

// SplitMix64's output mix (a bijection on 64 bits).
constexpr std::uint64_t mix64(std::uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// The first SplitMix64 output from state x: a counter-based hash of x.
constexpr std::uint64_t splitmix64(std::uint64_t x) { return mix64(x + kGoldenGamma); }

// What a stream is for; the values are part of the format (they change every order).
enum class RngPurpose : std::uint64_t {
  kValidationSplit = 1,
  kEpochOrder = 2,
  kMasking = 3,
  kParameterInit = 4,  // index: stable_hash of the parameter's name
  kTokenSampling = 5,  // index: the generated sequence (runtime/evaluation/token_sampler.h)
};

class SeededRng {
 public:
  // The stream (seed, purpose, index).
  constexpr SeededRng(std::uint64_t seed, RngPurpose purpose, std::uint64_t index)
      : state_(mix64(mix64(mix64(seed) + static_cast<std::uint64_t>(purpose)) + index)) {}

  // A generator whose state is `state` itself: its first output is splitmix64(state).
  static constexpr SeededRng from_state(std::uint64_t state) { return SeededRng(state); }

  constexpr std::uint64_t next() {
    state_ += kGoldenGamma;
    return mix64(state_);
  }

  // Uniform in [0, bound). REQUIRES: bound > 0.
  constexpr std::uint64_t below(std::uint64_t bound) {
    const std::uint64_t threshold = (0 - bound) % bound;  // 2^64 mod bound
    for (;;) {
      const std::uint64_t x = next();
      if (x >= threshold) return x % bound;
    }
  }

  // The generator that has drawn `n` more outputs than this one (SplitMix64's state is a
  // counter, so any position is one step away): lets a long stream be drawn in parallel
  // blocks that give the values of drawing it in order.
  constexpr SeededRng skipped(std::uint64_t n) const {
    return SeededRng(state_ + n * kGoldenGamma);
  }

  // Uniform in [0, 1) with 53 random bits.
  constexpr double uniform01() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }

 private:
  constexpr explicit SeededRng(std::uint64_t state) : state_(state) {}

  std::uint64_t state_;
};

}  // namespace scion::base
