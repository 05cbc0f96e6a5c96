// BatchStream: the endless sequence of batches one training job reads.
//
// Each job owns a stream with its own rows (e.g. the training side of a validation
// split), seed, batch size and order, so jobs co-batched through one trunk each keep
// their own data order. Epoch e visits every row once in the order
// epoch_order(rows, seed, e) (or as given, without shuffling); its last batch may be
// smaller than batch_size. After the last batch of an epoch comes the first of the next.
// Batch n is a pure function of (data, rows, options, n): masking draws from the stream
// (seed, kMasking, n), so seek() resumes a job exactly. The dataset is shared read-only;
// a stream itself is not thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "runtime/data/batcher.h"
#include "base/status.h"
#include "spec/workspace.h"

namespace scion::data {

struct BatchStreamOptions {
  spec::Objective objective = spec::Objective::kClassification;
  int batch_size = 8;
  int max_length = 0;
  float mask_probability = 0.15f;  // masked LM only
  std::uint64_t seed = 0;
  bool shuffle = true;             // false: rows in the order given (validation, evaluation)
  bool pad_to_max_length = false;  // false: pad to the longest row of each batch
};

// The options a training recipe asks for; max_length 0 means the architecture's.
BatchStreamOptions batch_options_for(const spec::TrainingSpec& training,
                                     const spec::Architecture& architecture);

class BatchStream {
 public:
  // Errors (kSpecError, naming the training key to change): batch_size < 1, max_length < 3,
  // mask_probability outside (0, 1] for masked LM, classification on unlabelled data, a
  // masked-LM tokenizer without [MASK], no rows. A row index outside the dataset is
  // kInternal.
  static Result<BatchStream> create(std::shared_ptr<const TokenizedDataset> data,
                                    std::vector<std::int64_t> rows,
                                    const BatchStreamOptions& options);

  Batch next();
  // The next call to next() returns batch `number`. REQUIRES: number >= 0.
  void seek(std::int64_t number);

  std::int64_t batches_per_epoch() const { return batches_per_epoch_; }
  std::int64_t position() const { return next_number_; }  // number of the next batch
  int epoch() const { return static_cast<int>(next_number_ / batches_per_epoch_); }
  const BatchStreamOptions& options() const { return options_; }

 private:
  BatchStream(std::shared_ptr<const TokenizedDataset> data, std::vector<std::int64_t> rows,
              const BatchStreamOptions& options);

  std::shared_ptr<const TokenizedDataset> data_;
  std::vector<std::int64_t> rows_;
  BatchStreamOptions options_;
  std::int64_t batches_per_epoch_ = 0;
  std::int64_t next_number_ = 0;
  int order_epoch_ = -1;             // the epoch `order_` belongs to
  std::vector<std::int64_t> order_;  // rows_ in this epoch's order
};

}  // namespace scion::data
