// TokenizedDataset: the examples of a dataset as token ids, ready for batching.
//
// Rows hold the tokenizer's ids without special tokens; batching frames and truncates
// them (runtime/data/batcher.h). A prompt/completion row is the prompt's ids followed by
// the completion's, each text tokenised alone (as ContinuationScorer and TextGenerator
// tokenise them), and records how many of its first ids are the prompt's. Build one per (dataset,
// tokenizer) and share it, read only, between every job and stream that trains on it
// (std::shared_ptr<const ...>).
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "runtime/data/dataset_reader.h"
#include "runtime/text/tokenizer.h"

namespace scion::data {

struct TokenizedDataset {
  std::vector<std::vector<std::int32_t>> rows;  // token ids per example, no specials
  std::vector<std::int32_t> labels;             // per row; empty when unlabelled
  std::vector<std::int32_t> prompt_lengths;     // per row: its prompt's ids; empty: no prompts
  text::SpecialTokens specials;                 // of the tokenizer that made the rows
  int vocab_size = 0;

  std::int64_t row_count() const { return static_cast<std::int64_t>(rows.size()); }
  bool labelled() const { return !labels.empty(); }
};

// One row per example, labels copied when the set is labelled; a prompt/completion set's
// rows are prompt + completion, with their prompt lengths.
TokenizedDataset tokenize_examples(const ExampleSet& examples, const text::Tokenizer& tokenizer);

// A continuous corpus for language-model pretraining, cut into consecutive windows of
// `window` tokens (the last one may be shorter). Use window = content_capacity(objective,
// max_length) so that a framed window fits max_length without truncation.
// REQUIRES: window > 0.
TokenizedDataset tokenize_corpus(std::string_view corpus, const text::Tokenizer& tokenizer,
                                 int window);

// How many content tokens fit in a framed sequence of at most max_length inputs:
// [CLS] content [SEP] for encoders and classification (max_length - 2); [BOS] content
// [EOS] shifted by one for causal LM (max_length - 1).
int content_capacity(bool causal_lm, int max_length);

}  // namespace scion::data
