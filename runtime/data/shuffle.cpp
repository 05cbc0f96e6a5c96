#include "runtime/data/shuffle.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <utility>

namespace scion::data {

void seeded_shuffle(std::vector<std::int64_t>& items, base::SeededRng& rng) {
  for (std::size_t i = items.size(); i > 1; --i) {
    const std::size_t j = static_cast<std::size_t>(rng.below(i));
    std::swap(items[i - 1], items[j]);
  }
}

std::vector<std::int64_t> epoch_order(const std::vector<std::int64_t>& rows, std::uint64_t seed,
                                      int epoch) {
  std::vector<std::int64_t> order = rows;
  base::SeededRng rng(seed, base::RngPurpose::kEpochOrder, static_cast<std::uint64_t>(epoch));
  seeded_shuffle(order, rng);
  return order;
}

Result<ValidationSplit> split_validation(std::int64_t row_count, float fraction,
                                         std::uint64_t seed) {
  if (!(fraction >= 0.0f && fraction < 1.0f))
    return spec_error(
        fmt::format("training.validation_split is {}; it must be in [0, 1)", fraction));
  std::vector<std::int64_t> rows(static_cast<std::size_t>(row_count));
  std::iota(rows.begin(), rows.end(), std::int64_t{0});
  ValidationSplit split;
  if (fraction == 0.0f) {
    split.train = std::move(rows);
    return split;
  }
  if (row_count < 2)
    return spec_error(
        fmt::format("the dataset has {} row(s); a validation split needs at least 2 "
                    "rows (set training.validation_split to 0 or add rows)",
                    row_count));
  const auto wanted =
      static_cast<std::int64_t>(std::llround(static_cast<double>(row_count) * fraction));
  const std::int64_t held_out = std::clamp<std::int64_t>(wanted, 1, row_count - 1);
  base::SeededRng rng(seed, base::RngPurpose::kValidationSplit, 0);
  seeded_shuffle(rows, rng);
  split.validation.assign(rows.begin(), rows.begin() + held_out);
  split.train.assign(rows.begin() + held_out, rows.end());
  std::sort(split.validation.begin(), split.validation.end());
  std::sort(split.train.begin(), split.train.end());
  return split;
}

}  // namespace scion::data
