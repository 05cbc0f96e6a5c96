// SegmentedTransformer: forward and backward of a family batch through one frozen trunk.
//
// A FamilyBatch is a list of segments; each segment is B sequences of one model
// (ModelWeights: the trunk plus its ancestors' adapters and its own). Rows of all segments
// are concatenated, every trunk operation (layer norms, the q/k/v/o and FFN products,
// GELU, residuals) runs ONCE over all rows, and each segment then applies its own
// adapters to its own row range: the adaptation methods at their sites around each product
// (a low-rank product beside it is a segmented product, as Punica's SGMV),
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
// Architecture::dropout) and to the inputs of trained adaptations that ask for it; attention
// probabilities are not dropped. The masked-LM head is the (tied or untied) output embedding
// applied directly to the final hidden states, without BERT's extra dense + norm transform.
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
// Files: family_batch.h (Segment, FamilyBatch: what a batch is), batch_validation.h (what
// forward() accepts), layer_trie.h (which layer applications segments share), batch_plan.h
// (the arena layout of a batch shape), transformer_pass.h with forward_pass.cpp and
// backward_pass.cpp (the passes), and forward_flops.cpp (what a batch costs).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "base/status.h"
#include "runtime/arena.h"
#include "runtime/backend.h"
#include "runtime/model/family_batch.h"
#include "runtime/model/model_weights.h"

namespace scion::runtime {

namespace detail {
struct BatchPlan;  // the arena layout of one batch shape (batch_plan.h)
}

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
