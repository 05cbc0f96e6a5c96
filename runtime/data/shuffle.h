// Seeded permutations and the validation split, reproducible on every platform (the
// generator and bounded-integer method are specified in base/seeded_rng.h).
// Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <vector>

#include "base/seeded_rng.h"
#include "base/status.h"

namespace scion::data {

// Fisher–Yates from the back: for i = n-1 down to 1, swap items[i] with items[rng.below(i+1)].
void seeded_shuffle(std::vector<std::int64_t>& items, base::SeededRng& rng);

// The order of `rows` for one epoch: a shuffle with the stream (seed, kEpochOrder, epoch).
std::vector<std::int64_t> epoch_order(const std::vector<std::int64_t>& rows, std::uint64_t seed,
                                      int epoch);

// Rows 0..row_count-1 divided into training and validation rows, each list ascending.
struct ValidationSplit {
  std::vector<std::int64_t> train;
  std::vector<std::int64_t> validation;
};

// fraction 0 keeps every row for training. Otherwise the validation set holds
// round(row_count * fraction) rows, at least 1 and at most row_count - 1, chosen as the
// first rows of a shuffle with the stream (seed, kValidationSplit, 0).
// Errors (kSpecError): fraction outside [0, 1); a split of fewer than 2 rows.
Result<ValidationSplit> split_validation(std::int64_t row_count, float fraction,
                                         std::uint64_t seed);

}  // namespace scion::data
