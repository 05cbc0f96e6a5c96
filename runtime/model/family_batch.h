// Segment and FamilyBatch: what one co-batched step of a family is made of.
//
// A FamilyBatch is a list of segments; each segment is B sequences of one model
// (ModelWeights: the trunk plus its ancestors' adapters and its own), with its tokens,
// lengths and targets in host memory. SegmentedTransformer (transformer.h) runs it; the
// batch checks, the layer trie and the batch plan read it, and need only these types.
// prompt_rows, keys_before and first_position say where a segment's rows sit once its
// prompt tokens and its key/value cache (kv_cache.h) are counted.
#pragma once

#include <cstdint>
#include <vector>

#include "runtime/model/model_weights.h"

namespace scion::runtime {

class KvCache;  // runtime/model/kv_cache.h

// The segment's tokens, lengths and targets are host memory; forward() copies them to the
// backend.
struct Segment {
  const ModelWeights* model = nullptr;
  int batch = 0;                          // B: sequences in this segment
  int length = 0;                         // T: token positions per sequence (padded)
  const std::int32_t* tokens = nullptr;   // (B, T) token ids < V
  const std::int32_t* lengths = nullptr;  // (B) real tokens per sequence (1..T); null: all T
  // Classification: (B) class indices. Masked/causal LM: (B, T) target token per position
  // (already shifted for causal LM), kIgnoreIndex where no loss is taken. Token
  // classification: (B, T) tag per position, kIgnoreIndex where no loss is taken.
  // Null: inference only, no loss (and for regression and multi-label heads, whose
  // targets are `values`).
  const std::int32_t* targets = nullptr;
  std::uint64_t dropout_seed = 0;  // vary per step; masks depend only on (seed, row, site)
  // The index of this segment's first sequence in the whole batch: a data-parallel rank
  // trains rows [first_row, first_row + batch) of it, and its dropout masks are the ones
  // those rows get in one process. 0 outside data parallelism.
  std::int64_t first_row = 0;
  // The mean loss divides by this; 0: this segment's own (loss_denominator() in
  // batch_plan.h: the targets counted, their class weights' sum under class weights, B·K
  // values for regression and multi-label heads). Data parallelism gives each rank a
  // slice of a batch and here the whole batch's, so that the ranks' losses and gradients
  // sum to the whole batch's mean.
  double loss_denominator = 0;
  // Regression and multi-label heads: (B, K) target values (multi-label: 1 or 0 per
  // label). Null: inference only.
  const float* values = nullptr;
  // (B, T) token types (sentence pairs: BERT's segment ids) < Architecture::type_vocab_size;
  // null: every token type 0. Only a base with token-type embeddings reads them.
  const std::int32_t* token_types = nullptr;
  // Incremental decoding (inference only, batch 1, no layer sharing): the keys and values
  // of the positions this sequence has run so far, created for this segment's model
  // (runtime/model/kv_cache.h). The tokens are the next positions: they attend to the cached
  // rows and to each other (causally), their positions continue at cache->cached(), and
  // forward() appends their keys and values and advances the cache. The model's prompt
  // tokens run once, in the first forward over an empty cache. Null: no cache.
  KvCache* cache = nullptr;
  // LM inference: the logits of each sequence's last real position only, (B, 1, V),
  // instead of every position's: what sampling the next token needs.
  bool last_position_logits = false;
};

// Prompt-tuning rows forward() runs before `seg`'s tokens: the model's prompt tokens,
// or none when its cache already holds them.
int prompt_rows(const Segment& seg);
// Keys and values block `block` attends to before `seg`'s own rows: the model's prefix
// tokens, or every row of its cache.
int keys_before(const Segment& seg, int block);
// Where `seg`'s rows start among the positions of its sequence: after the cached ones.
int first_position(const Segment& seg);

struct FamilyBatch {
  std::vector<Segment> segments;
  bool training = false;  // dropout on (the trunk's rate, and trained adaptations' own)
  // Inference only (no training, no targets): compute identical layer applications once.
  // Segments whose inputs (tokens, lengths, prompts) are equal share the embeddings; two
  // segments that shared block l-1's output and apply the same parameters in block l
  // (prefixes, adaptations, bottleneck adapters; compared by buffer, and the parameter pool
  // holds one buffer per digest) share block l. This is the trie of layer identities:
  // head-only descendants share the whole trunk, an adapter in the top layer branches there,
  // prefix or prompt tuning branches where it first acts. Distinct branches at one layer
  // are still co-batched over that layer's frozen products.
  bool share_identical = false;
  // Training only (ignored otherwise): activation recomputation. The forward pass keeps
  // each block's output and one set of block buffers, reused by every block; backward()
  // runs each block's forward again (but the top one's, still in those buffers) just
  // before its backward. The same kernels on the same inputs give the same values, so
  // gradients equal those without recomputation bit for bit; activations take L x C floats
  // a row plus one block's instead of L blocks' (workbench/training_groups.h counts both).
  bool recompute = false;
};

}  // namespace scion::runtime
