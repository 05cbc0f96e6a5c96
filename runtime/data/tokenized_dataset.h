// TokenizedDataset: the examples of a dataset as token ids, ready for batching.
//
// Rows hold the tokenizer's ids without special tokens; batching frames and truncates
// them (runtime/data/batcher.h). Sentence pairs keep the second text's ids apart, with the
// tokenizer's pair framing. Labels follow the dataset's label type: a class index per row
// (single), K target values per row (multi: 1 for each of its labels, 0 for the others;
// number: its values), or a tag per word with the index of each word's first sub-word in
// its row (tags). A prompt/completion row is the prompt's ids followed by the completion's,
// each text tokenised alone (as ContinuationScorer and TextGenerator tokenise them), and
// records how many of its first ids are the prompt's. Build one per (dataset, tokenizer)
// and share it, read only, between every job and stream that trains on it
// (std::shared_ptr<const ...>).
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "runtime/data/dataset_reader.h"
#include "runtime/text/tokenizer.h"
#include "spec/workspace.h"

namespace scion::data {

struct TokenizedDataset {
  std::vector<std::vector<std::int32_t>> rows;  // token ids per example, no specials
  std::vector<std::int32_t> labels;             // single: per row; empty otherwise
  std::vector<std::int32_t> prompt_lengths;     // per row: its prompt's ids; empty: no prompts
  text::SpecialTokens specials;                 // of the tokenizer that made the rows
  int vocab_size = 0;
  spec::LabelType label_type = spec::LabelType::kSingle;
  // Sentence pairs: the second text's ids per row (no specials); empty for single texts.
  std::vector<std::vector<std::int32_t>> pair_rows;
  text::PairFraming pair_framing;
  std::vector<std::vector<float>> targets;  // multi and number: K values per row
  // tags: per row, each word's first sub-word (an index into rows[r]) and its tag.
  std::vector<std::vector<std::int32_t>> word_starts, tags;
  bool has_labels = false;  // the rows carry labels of label_type (set, or `labels` filled)

  std::int64_t row_count() const { return static_cast<std::int64_t>(rows.size()); }
  bool labelled() const { return has_labels || !labels.empty(); }
  bool pairs() const { return !pair_rows.empty(); }
  // Values per row of `targets` (multi: the label count; number: the targets' count).
  int target_width() const { return targets.empty() ? 0 : static_cast<int>(targets[0].size()); }
};

// One row per example, labels copied when the set is labelled; a prompt/completion set's
// rows are prompt + completion, with their prompt lengths. `labels`: the dataset's label
// count, the width of a multi-label row's targets.
TokenizedDataset tokenize_examples(const ExampleSet& examples, const text::Tokenizer& tokenizer,
                                   int labels = 0);

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
