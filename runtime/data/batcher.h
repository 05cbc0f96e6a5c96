// Batch building: frame, truncate, pad and (for masked LM) mask a list of dataset rows.
//
// Framing: encoder and classification rows are [CLS] content [SEP]; causal-LM rows are
// [BOS] content [EOS] with inputs = all but the last token and targets = all but the first.
// Content beyond content_capacity() is truncated from the end, keeping the closing
// special. A prompt/completion row (TokenizedDataset::prompt_lengths) takes no loss on its
// prompt: the targets that are prompt tokens are kIgnoreIndex, so the loss covers the
// completion and the closing EOS alone; a row too long loses its prompt's first tokens
// before anything else (the tokens nearest the completion stay, as ContinuationScorer
// truncates an input), then, if still too long, its completion's last ones. Rows are padded with
// the pad id to T = the longest row of the batch, or to max_length when pad_to_max_length is set.
// Every array is row-major.
//
// Masked LM (BERT's rule): each content position (never [CLS]/[SEP]/padding) is chosen
// with probability mask_probability; a row with content but no chosen position gets one
// chosen uniformly, so every row contributes to the loss. A chosen position becomes
// [MASK] with probability 0.8, a uniformly drawn non-special token with 0.1, and stays
// as it is with 0.1; its target is the original token. Draw order (part of the
// reproducibility contract): rows in order; per row one uniform01 per content position,
// then the fallback below(count) if needed, then per chosen position (ascending) one
// uniform01 and, for a random token, below(vocab_size) until a non-special id comes out.
// Pure functions; thread-safe given distinct rngs.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "base/seeded_rng.h"
#include "runtime/data/tokenized_dataset.h"

namespace scion::data {

// Target of a position that contributes no loss (unmasked MLM tokens, padding).
inline constexpr std::int32_t kIgnoreIndex = -100;

struct Batch {
  int batch_size = 0;                        // B
  int length = 0;                            // T
  std::vector<std::int32_t> tokens;          // (B, T) input ids, padding = pad id
  std::vector<std::int32_t> attention_mask;  // (B, T) 1 on real tokens, 0 on padding
  std::vector<std::int32_t> lengths;         // (B) real tokens per row
  std::vector<std::int32_t> labels;          // (B) classification only; else empty
  std::vector<std::int32_t> targets;         // (B, T) LM objectives only, kIgnoreIndex where
                                             // no loss; else empty
  std::vector<std::int64_t> rows;            // (B) the dataset row of each batch row
  std::int64_t number = 0;                   // position in its stream, from 0
  int epoch = 0;
  int first_row = 0;  // a data-parallel rank's slice: its first row in the whole batch
};

struct PaddingOptions {
  int max_length = 0;  // T_max; REQUIRES: >= 3 (a special on each side and one token)
  bool pad_to_max_length = false;
};

// REQUIRES: data.labelled(); every row index in [0, data.row_count()).
Batch make_classification_batch(const TokenizedDataset& data, std::span<const std::int64_t> rows,
                                const PaddingOptions& padding);

// REQUIRES: data.specials.mask != kNoToken; 0 < mask_probability <= 1.
Batch make_masked_lm_batch(const TokenizedDataset& data, std::span<const std::int64_t> rows,
                           const PaddingOptions& padding, float mask_probability, base::SeededRng& rng);

Batch make_causal_lm_batch(const TokenizedDataset& data, std::span<const std::int64_t> rows,
                           const PaddingOptions& padding);

}  // namespace scion::data
