// Picking the next token of a generated text from one position's logits, by the rules of
// transformers' generate():
//   greedy (temperature 0): the token of the largest logit, the lowest id among equals
//     (torch.argmax);
//   sampling (temperature > 0), in the order of transformers' logits warpers:
//     1. the logits divided by the temperature;
//     2. top_k > 0: only tokens whose logit is at least the k-th largest stay (ties with
//        it stay too, as TopKLogitsWarper keeps them);
//     3. top_p < 1: of what stays, only the most probable tokens stay whose probability
//        mass, summed from the most probable down, has not reached top_p before them (the
//        token that crosses top_p stays, and at least one always does), as
//        TopPLogitsWarper;
//     4. one token drawn from the softmax of what stays: a uniform number u in [0, 1)
//        from `rng`, and the first token (in id order) at which the cumulative
//        probability exceeds u.
// Probabilities are computed in double. Unlike transformers, no top-k applies unless
// asked for (its generate() defaults to top_k 50). Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <span>

#include "base/seeded_rng.h"
#include "base/status.h"

namespace scion::runtime {

struct SamplingOptions {
  float temperature = 0.0f;  // 0: greedy
  int top_k = 0;             // 0: every token
  float top_p = 1.0f;        // 1: every token
  std::uint64_t seed = 0;
};

// Errors (kInvalidArgument, naming the option): a temperature below 0 or not finite,
// top_k below 0, top_p outside (0, 1].
Status check_sampling(const SamplingOptions& options);

// The next token. `rng` is drawn from only when sampling (one uniform number a token).
// REQUIRES: check_sampling(options) ok; logits not empty.
std::int32_t pick_token(std::span<const float> logits, const SamplingOptions& options,
                        base::SeededRng& rng);

}  // namespace scion::runtime
