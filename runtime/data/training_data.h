// The tokenized rows a training job reads from a spec::Dataset, the one call a trainer
// needs between the spec and a BatchStream.
//
// Rows follow from format and objective: a plain-text dataset trained as a language model
// (masked or causal) is one continuous corpus cut into windows of
// content_capacity(objective, max_length) tokens, so pretraining text is packed and no
// padding is wasted; every other case is one row per example (JSONL, CSV, TSV, and plain
// text for classification, which then fails for want of labels in BatchStream::create).
// Errors are those of read_dataset / read_corpus. Thread-safe.
#pragma once

#include <memory>

#include "runtime/data/tokenized_dataset.h"
#include "base/status.h"
#include "spec/workspace.h"

namespace scion::data {

// REQUIRES: max_length >= 3.
Result<std::shared_ptr<const TokenizedDataset>> load_tokenized_dataset(
    const spec::Dataset& dataset, const text::Tokenizer& tokenizer, spec::Objective objective,
    int max_length);

}  // namespace scion::data
