// BatchPlan: the activation layout of one family batch shape.
//
// Every activation, value saved for backward and gradient scratch buffer of a batch lives
// in one Arena, carved into named views by plan_batch(): trunk buffers span all N rows
// (or, in inference, the widest stage's rows, one set reused by every block); adapter and
// head buffers are per segment. The plan also holds the trie of layer applications
// (layer_trie.h) and the per-segment row ranges. SegmentedTransformer keeps one plan and
// rebuilds it only when batch_signature() changes, so a training loop with a fixed batch
// shape allocates nothing per step.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"
#include "runtime/arena.h"
#include "runtime/backend.h"
#include "runtime/model/family_batch.h"
#include "runtime/model/layer_trie.h"

namespace scion::runtime::detail {

struct BatchPlan {
  struct SegmentActs {
    std::int64_t row0 = 0, rows = 0;
    double denominator = 0;  // the last forward's loss denominator (Segment::loss_denominator)
    int B = 0, T = 0, P = 0, S = 0;  // S = P + T
    // The segment's inputs in backend memory (the Segment's pointers are host memory):
    // arena buffers, and what each forward copied into them, null where the Segment has
    // none (the batch signature does not say whether it has lengths or targets).
    std::int32_t *tokens_buffer = nullptr, *lengths_buffer = nullptr,
                 *attn_lengths_buffer = nullptr, *targets_buffer = nullptr;
    float* values_buffer = nullptr;              // (B, K) regression and multi-label targets
    const std::int32_t* tokens = nullptr;        // (B, T)
    const std::int32_t* lengths = nullptr;       // (B) real tokens
    const std::int32_t* attn_lengths = nullptr;  // (B) prompt + real tokens
    const std::int32_t* targets = nullptr;       // (B) classes, or (B, S) LM or tag targets
    const float* values = nullptr;               // (B, K) target values
    // Host staging of what the Segment does not hold as such, and of the losses read back.
    std::vector<std::int32_t> host_attn_lengths, host_lm_targets;
    std::vector<float> host_losses;
    float* prompt = nullptr;  // (P, C) concatenated prompts
    float* dprompt = nullptr;
    std::vector<float*> prefix_k, prefix_v;  // per block (Pf, C), null when Pf = 0
    float* dprefix_k = nullptr;              // (max Pf, C) scratch
    float* dprefix_v = nullptr;
    // The buffers each adaptation method's state on a linear asked for
    // (LinearAdaptation::activation_sizes), per [block][linear][j] as
    // BlockWeights::adaptations; null where an entry is empty.
    std::vector<std::array<std::vector<std::vector<float*>>, kLinearCount>> adaptation_activations;
    // Likewise for the block adaptations (BlockAdaptation::activation_sizes), per
    // [block][site][j] as BlockWeights::block_adaptations.
    std::vector<std::array<std::vector<std::vector<float*>>, kBlockSiteCount>> block_activations;
    float* pooled = nullptr;   // (B, C)
    float* dpooled = nullptr;  // (B, C)
    // BERT's pooler between pooling and the head: tanh(pooled · Wᵀ + b).
    float* pooler_pre = nullptr;  // (B, C)
    float* pooler_out = nullptr;  // (B, C)
    float* dpooler = nullptr;     // (B, C)
    float* last_hidden = nullptr;  // (B, C) each sequence's last position, when only its
                                   // logits are wanted (Segment::last_position_logits)
    float* logits = nullptr;       // (B, K), (rows, K) for tags, (rows, V), or (B, V) of the
                                   // last positions
    float* dlogits = nullptr;
    // Softmax or sigmoid probabilities; for a regression head, predictions − targets.
    float* probs = nullptr;
    float* losses = nullptr;
  };
  // ln*_mean: layer norm only (RMSNorm saves rstd alone). kv_k, kv_v: grouped-query
  // attention's (rows, Ckv) keys and values before repeat_kv widens them into k, v.
  // gate: the gated FFN's gate_proj output, (rows, F).
  struct BlockActs {
    float *ln1, *ln1_mean, *ln1_rstd, *q, *k, *v, *kv_k, *kv_v, *att, *probs, *o, *o_mask, *res1;
    float *ln2, *ln2_mean, *ln2_rstd, *h, *gate, *g, *f, *f_mask, *res2;
  };

  std::string signature;
  Arena arena;
  std::int64_t N = 0;  // rows of all segments
  float dropout = 0.0f;
  // Inference (no targets): one set of block buffers serves every block, and each
  // block's input is gathered into `in` from the previous stage's units.
  bool inference = false;
  // Training with recomputation (FamilyBatch::recompute): one set of block buffers too,
  // and each block's output kept in block_out[l] (N, C), the next block's input.
  bool recompute = false;
  std::vector<float*> block_out;
  std::vector<Stage> stages;
  std::vector<std::int64_t> stage_rows;  // rows computed at each stage (N without sharing)
  std::vector<int> final_unit;           // per segment: its unit in stages.back()
  float* in = nullptr;
  std::vector<SegmentActs> segments;
  std::vector<BlockActs> blocks;
  float *emb = nullptr, *emb_mask = nullptr, *embn = nullptr, *embn_mean = nullptr,
        *embn_rstd = nullptr, *lnf = nullptr, *lnf_mean = nullptr, *lnf_rstd = nullptr;
  float *dx = nullptr, *dtmp = nullptr, *dq = nullptr, *dk = nullptr, *dv = nullptr,
        *datt = nullptr, *dbranch = nullptr, *dh = nullptr, *dg = nullptr;
  // (stage rows or N, C): the rows a block adaptation writes its own output into before it
  // adds it to the residual stream (BlockRows::delta).
  float* adapter_out = nullptr;
  float *dkv_k = nullptr, *dkv_v = nullptr;  // (N, Ckv) grouped-query attention only
  float* dgate = nullptr;                    // (N, F) gated FFN only
  // Adaptation methods (runtime/model/adaptation_method.h), when some segment has one on a
  // linear: the linear's input with each unit's input-site adaptations applied (stage rows,
  // the widest such input), and in training the gradients of an adapted output's and an
  // adapted input's rows (N, the widest of each).
  float *adapted_in = nullptr, *adapted_dout = nullptr, *adapted_din = nullptr;
  // The adaptations' shared scratch (LinearAdaptation::scratch_sizes and
  // BlockAdaptation::scratch_sizes): entry k the widest ask of any adaptation, on a linear
  // or a block, of any segment; null where none asks.
  std::vector<float*> adaptation_scratch;
};

// No training and no targets: no loss, no backward, block buffers reused.
bool is_inference(const FamilyBatch& batch);

// Everything the arena layout depends on: shapes, and each model's adapter structure
// (not its address, which a caller may reuse for a different model).
std::string batch_signature(const FamilyBatch& batch);

// Lays out every buffer of `batch` in plan.arena (the previous arena is released first,
// so the two are never held at once) and fills the plan's pointers and row ranges.
// REQUIRES: validate_batch(batch) succeeded. Errors: the arena's allocation.
Status plan_batch(BatchPlan& plan, const FamilyBatch& batch, Backend& backend);

}  // namespace scion::runtime::detail
