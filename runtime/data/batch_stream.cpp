#include "runtime/data/batch_stream.h"

#include <fmt/format.h>

#include <algorithm>
#include <cassert>

#include "runtime/data/shuffle.h"

namespace scion::data {
namespace {

Status check_options(const TokenizedDataset& data, const std::vector<std::int64_t>& rows,
                     const BatchStreamOptions& options) {
  if (options.batch_size < 1)
    return spec_error(
        fmt::format("training.batch_size is {}; it must be at least 1", options.batch_size));
  if (options.max_length < 3)
    return spec_error(
        fmt::format("training.max_length is {}; it must be at least 3 (two special "
                    "tokens and one token of text)",
                    options.max_length));
  if (rows.empty())
    return spec_error(
        "the dataset has no rows to train on; add examples or lower "
        "training.validation_split");
  for (std::int64_t row : rows)
    if (row < 0 || row >= data.row_count())
      return internal_error(fmt::format("batch stream row {} is outside the dataset's {} rows", row,
                                        data.row_count()));
  switch (options.objective) {
    case spec::Objective::kClassification:
      if (!data.labelled())
        return spec_error(
            "training.objective is classification but the dataset has no labels; "
            "list them under the dataset's labels");
      break;
    case spec::Objective::kMaskedLm:
      if (!(options.mask_probability > 0.0f && options.mask_probability <= 1.0f))
        return spec_error(fmt::format("training.mask_probability is {}; it must be in (0, 1]",
                                      options.mask_probability));
      if (data.specials.mask == text::kNoToken)
        return spec_error("training.objective is masked_lm but the tokenizer has no [MASK] token");
      break;
    case spec::Objective::kCausalLm:
      break;
  }
  return Status::ok();
}

}  // namespace

BatchStreamOptions batch_options_for(const spec::TrainingSpec& training,
                                     const spec::Architecture& architecture) {
  BatchStreamOptions options;
  options.objective = training.objective;
  options.batch_size = training.batch_size;
  options.max_length = training.max_length > 0 ? training.max_length : architecture.max_length;
  options.mask_probability = training.mask_probability;
  options.seed = training.seed;
  return options;
}

Result<BatchStream> BatchStream::create(std::shared_ptr<const TokenizedDataset> data,
                                        std::vector<std::int64_t> rows,
                                        const BatchStreamOptions& options) {
  SCION_RETURN_IF_ERROR(check_options(*data, rows, options));
  return BatchStream(std::move(data), std::move(rows), options);
}

BatchStream::BatchStream(std::shared_ptr<const TokenizedDataset> data,
                         std::vector<std::int64_t> rows, const BatchStreamOptions& options)
    : data_(std::move(data)), rows_(std::move(rows)), options_(options) {
  const auto count = static_cast<std::int64_t>(rows_.size());
  batches_per_epoch_ = (count + options_.batch_size - 1) / options_.batch_size;
}

void BatchStream::seek(std::int64_t number) {
  assert(number >= 0);
  next_number_ = number;
}

Batch BatchStream::next() {
  const int epoch_now = epoch();
  if (order_epoch_ != epoch_now) {
    order_ = options_.shuffle ? epoch_order(rows_, options_.seed, epoch_now) : rows_;
    order_epoch_ = epoch_now;
  }
  const auto first =
      static_cast<std::size_t>((next_number_ % batches_per_epoch_) * options_.batch_size);
  const std::size_t count =
      std::min(order_.size() - first, static_cast<std::size_t>(options_.batch_size));
  const std::span<const std::int64_t> rows(order_.data() + first, count);
  const PaddingOptions padding{options_.max_length, options_.pad_to_max_length};

  Batch batch;
  switch (options_.objective) {
    case spec::Objective::kClassification:
      batch = make_classification_batch(*data_, rows, padding);
      break;
    case spec::Objective::kMaskedLm: {
      base::SeededRng rng(options_.seed, base::RngPurpose::kMasking, static_cast<std::uint64_t>(next_number_));
      batch = make_masked_lm_batch(*data_, rows, padding, options_.mask_probability, rng);
      break;
    }
    case spec::Objective::kCausalLm:
      batch = make_causal_lm_batch(*data_, rows, padding);
      break;
  }
  batch.number = next_number_;
  batch.epoch = epoch_now;
  ++next_number_;
  return batch;
}

}  // namespace scion::data
