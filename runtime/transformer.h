// SegmentedTransformer: forward and backward of a family batch through one frozen trunk.
//
// A FamilyBatch is a list of segments; each segment is B sequences of one model
// (ModelWeights: the trunk plus its ancestors' adapters and its own). Rows of all segments
// are concatenated, every trunk operation (layer norms, the q/k/v/o and FFN products,
// GELU, residuals) runs ONCE over all rows, and each segment then applies its own
// adapters to its own row range: LoRA as a segmented low-rank product (Punica's SGMV),
// prefix keys/values inside that segment's attention, prompt embeddings at its front,
// bottleneck adapters after its attention/FFN outputs, and its own head and loss.
// Single-model training is the one-segment case.
//
// Gradients: backward() propagates the loss Σ_s mean_loss_s. Segment s's rows only reach
// its own adapters, so each model's gradient views receive exactly what training it
// alone would give. Trunk weight gradients are computed only when the trunk is trained,
// which forward() allows only for a batch with a single segment. Gradients accumulate
// (+=) into the views bound when resolving each ModelWeights; zero them between steps.
//
// The model forward is a flat list of layer calls (embeddings, blocks, final norm,
// heads) and backward() is the same list reversed; each layer is a free-function kernel
// called through the Backend. Activations live in one Arena laid out for the batch's
// shape; it is rebuilt only when the shape changes, so a training loop with a fixed
// batch shape allocates nothing per step.
//
// Incremental decoding: a segment with a key/value cache (Segment::cache, kv_cache.h) runs
// only its next positions, attending to the cached ones; runtime/evaluation/
// text_generator.h generates text that way.
//
// Scope: dropout applies to the embeddings and to each attention and FFN output (rate
// Architecture::dropout) and to trained LoRA inputs; attention probabilities are not
// dropped. The masked-LM head is the (tied or untied) output embedding applied directly
// to the final hidden states, without BERT's extra dense + norm transform.
//
// Imported BERT-family bases (spec::Architecture from config.json) differ only where
// Hugging Face's BertModel does: token-type row 0 added to every embedding, their
// layer_norm_eps, exact (erf) GELU in the FFN, and the pooler tanh(dense(·)) between
// pooling and a classification head, as BertForSequenceClassification applies it.
//
// Usage (one training step of two jobs on one trunk):
//   SegmentedTransformer net(backend);
//   FamilyBatch batch{.segments = {{&job_a, 8, 128, tok_a, len_a, labels_a, seed_a},
//                                  {&job_b, 8, 128, tok_b, len_b, labels_b, seed_b}},
//                     .training = true};
//   auto out = net.forward(batch);      // out->at(s).loss, .logits (backend memory)
//   grads_a.zero(); grads_b.zero();     // before backward, or accumulate over micro-batches
//   net.backward();
//   optimizer_a.step(lr_a); optimizer_b.step(lr_b);
// Not thread-safe; one instance per thread.
//
// Files: batch_validation.h (what forward() accepts), layer_trie.h (which layer
// applications segments share), batch_plan.h (the arena layout of a batch shape),
// transformer_pass.h with forward_pass.cpp and backward_pass.cpp (the passes), and
// forward_flops.cpp (what a batch costs).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "runtime/arena.h"
#include "runtime/backend.h"
#include "runtime/model_weights.h"
#include "base/status.h"

namespace scion::runtime {

namespace detail {
struct BatchPlan;  // the arena layout of one batch shape (batch_plan.h)
}

class KvCache;  // runtime/kv_cache.h

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
  // (runtime/kv_cache.h). The tokens are the next positions: they attend to the cached
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
  bool training = false;  // dropout on (the trunk's rate, and trained LoRA's own rate)
  // Inference only (no training, no targets): compute identical layer applications once.
  // Segments whose inputs (tokens, lengths, prompts) are equal share the embeddings; two
  // segments that shared block l-1's output and apply the same parameters in block l
  // (prefixes, LoRA, bottleneck adapters; compared by buffer, and the parameter pool
  // holds one buffer per digest) share block l. This is the trie of layer identities:
  // head-only descendants share the whole trunk, a LoRA in the top layer branches there,
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

struct SegmentResult {
  float loss = 0.0f;  // the loss summed over targets / denominator (Segment::loss_denominator)
  std::int64_t counted =
      0;                   // targets that were not ignored (values, for regression and multi-label)
  double denominator = 0;  // what `loss` divided by
  // Sequence heads: (B, K) (regression: the predicted values; multi-label: logits, whose
  // sigmoid is each label's probability). Token classification: (B, P+T, K). LM:
  // (B, P+T, V), or (B, 1, V) with last_position_logits. The first P positions are the
  // segment's prompt rows (prompt_rows()). Backend memory (read it with copy_to_host), valid
  // until the next forward().
  Tensor logits;
};

class SegmentedTransformer {
 public:
  explicit SegmentedTransformer(Backend& backend);
  ~SegmentedTransformer();

  // Errors (kInvalidArgument): an empty batch, segments whose models do not share the
  // same trunk storage, a trained trunk in a multi-segment batch, sequences longer than
  // max_length (prompt tokens included), token ids or labels out of range; a cache in a
  // batch that trains, has targets or shares layers, on a segment of more than one
  // sequence, made for another model, or without room for the tokens.
  Result<std::vector<SegmentResult>> forward(const FamilyBatch& batch);

  // REQUIRES: the last forward() had targets on every segment and succeeded.
  Status backward();

 private:
  Backend& backend_;
  std::unique_ptr<detail::BatchPlan> plan_;
  FamilyBatch batch_;
  std::vector<SegmentResult> results_;
  bool ready_for_backward_ = false;
};

// The most units one stage of forward(batch) computes: 1 when every segment shares every
// layer, the segment count without sharing. Rows held at once = this × rows per segment.
int widest_stage(const FamilyBatch& batch);

// FLOPs (2 per multiply-add) of forward(batch): products, attention scores and mixing,
// adapters and heads, counted per shared layer application when batch.share_identical.
// Element-wise work (norms, GELU, softmax) is not counted. For benchmarks and reports.
double forward_flops(const FamilyBatch& batch);

}  // namespace scion::runtime
