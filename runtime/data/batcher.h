// Batch building: frame, truncate, pad and (for masked LM) mask a list of dataset rows.
//
// Framing: encoder and classification rows are [CLS] content [SEP]; causal-LM rows are
// [BOS] content [EOS] with inputs = all but the last token and targets = all but the first.
// Content beyond content_capacity() is truncated from the end, keeping the closing
// special. A sentence pair is framed as its tokenizer frames one (text::PairFraming), the
// two texts truncated longest first as Hugging Face tokenizers do (the shorter kept whole
// when the longer alone can give up enough, else each cut to half of the room), with
// token types 0 up to the middle specials and the framing's second type after them. A
// prompt/completion row (TokenizedDataset::prompt_lengths) takes no loss on its prompt: the
// targets that are prompt tokens are kIgnoreIndex, so the loss covers the completion and the
// closing EOS alone; a row too long loses its prompt's first tokens before anything else (the
// tokens nearest the completion stay, as ContinuationScorer truncates an input), then, if
// still too long, its completion's last ones. Rows are padded with the pad id to T = the
// longest row of the batch, or to max_length when pad_to_max_length is set. Every array is
// row-major.
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
  std::vector<std::int32_t> labels;          // (B) single-label classification; else empty
  std::vector<std::int32_t> targets;         // (B, T) LM objectives and token classification
                                             // (a word's tag at its first sub-word),
                                             // kIgnoreIndex where no loss; else empty
  std::vector<float> values;                 // (B, K) regression and multi-label targets
  int value_width = 0;                       // K of `values`
  std::vector<std::int32_t> token_types;     // (B, T) sentence pairs; empty: every token 0
  std::vector<std::int64_t> rows;            // (B) the dataset row of each batch row
  std::int64_t number = 0;                   // position in its stream, from 0
  int epoch = 0;
  int first_row = 0;  // a data-parallel rank's slice: its first row in the whole batch
};

struct PaddingOptions {
  int max_length = 0;  // T_max; REQUIRES: >= 3 (a special on each side and one token)
  bool pad_to_max_length = false;
};

// Rows framed for a head (pairs as their framing says), with their labels as
// data.label_type holds them: `labels` (single), `values` (multi, number) or per-position
// `targets` (tags). Unlabelled data (inference) gets no labels.
// REQUIRES: every row index in [0, data.row_count()).
Batch make_classification_batch(const TokenizedDataset& data, std::span<const std::int64_t> rows,
                                const PaddingOptions& padding);

// How many tokens of each text of a pair of lengths (first, second) fit `room` tokens,
// as Hugging Face's longest-first truncation cuts them.
std::pair<std::size_t, std::size_t> truncate_pair(std::size_t first, std::size_t second,
                                                  std::size_t room);

// REQUIRES: data.specials.mask != kNoToken; 0 < mask_probability <= 1.
Batch make_masked_lm_batch(const TokenizedDataset& data, std::span<const std::int64_t> rows,
                           const PaddingOptions& padding, float mask_probability, base::SeededRng& rng);

Batch make_causal_lm_batch(const TokenizedDataset& data, std::span<const std::int64_t> rows,
                           const PaddingOptions& padding);

}  // namespace scion::data
