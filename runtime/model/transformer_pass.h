// Pass: the forward and backward passes of one planned family batch (transformer.h).
//
// forward_pass.cpp holds the forward, a flat list of layer calls (embeddings, blocks,
// final norm, heads); backward_pass.cpp holds the same list reversed. Each call goes
// through the Backend over the buffers the BatchPlan laid out: trunk operations over all
// rows of a stage at once, adapters and heads over their own segment's (or unit's) rows.
// A Pass lives for one call; the plan and the batch outlive it.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "base/seeded_rng.h"
#include "runtime/backend.h"
#include "runtime/cpu/dropout.h"
#include "runtime/model/batch_plan.h"
#include "runtime/model/transformer.h"

namespace scion::runtime::detail {

// Dropout stream ids of the trunk's sites, distinct per block.
inline std::uint64_t site_stream(int block, int site) {
  return base::splitmix64(static_cast<std::uint64_t>(block + 1) * 8 +
                          static_cast<std::uint64_t>(site));
}
constexpr int kEmbeddingSite = 0, kAttentionSite = 1, kFfnSite = 2;

// The forward/backward passes, over one planned batch.
class Pass {
 public:
  using Plan = BatchPlan;
  Pass(Backend& backend, Plan& plan, const FamilyBatch& batch)
      : be_(backend), plan_(plan), batch_(batch), trunk_(*batch.segments[0].model),
        a_(trunk_.arch), C_(a_.width), F_(a_.ffn_width), N_(plan.N),
        pre_norm_(a_.norm == spec::NormPlacement::kPre),
        grouped_(a_.key_value_heads() != a_.heads),
        rotary_(a_.positions == spec::PositionKind::kRotary) {}

  void forward(std::vector<SegmentResult>& results);
  void backward();

 private:
  const Segment& seg(std::size_t s) const { return batch_.segments[s]; }
  std::size_t segment_count() const { return batch_.segments.size(); }
  // The units computed at block l, and their rows (all of them: N_ in training).
  const Stage& units(int l) const { return plan_.stages[l + 1]; }
  std::int64_t rows_at(int l) const { return plan_.stage_rows[l + 1]; }

  // The model's norm (layer norm with its epsilon, or RMSNorm; `mean` unused by RMSNorm)
  // and FFN activation (spec::Architecture's choices).
  void norm_forward(float* out, float* mean, float* rstd, const float* inp, const NormWeights& w,
                    std::int64_t rows);
  void norm_backward(float* dinp, const NormWeights& w, const float* dout, const float* inp,
                     const float* mean, const float* rstd, std::int64_t rows, GradMode mode);
  void activation_forward(float* out, const float* inp, std::int64_t n);
  void activation_backward(float* dinp, const float* inp, const float* dout, std::int64_t n);

  // Copies the segments' host inputs (tokens, lengths, targets) into backend memory.
  void prepare_segment_inputs();
  const std::int32_t* upload(std::int32_t* dst, const std::int32_t* host, std::int64_t n) {
    be_.copy_to_device(dst, host, static_cast<std::size_t>(n) * sizeof(std::int32_t));
    return dst;
  }
  void embeddings_forward();
  const float* block_forward(int l, const float* x);
  // q, k and v of block l from its attention input: the products, rotary positions on q
  // and k, and grouped-query attention's k and v widened to every head.
  void qkv_forward(int l, const float* inp);
  // Rotary positions over the rows of block l, per unit (forward) or segment (backward):
  // `heads` heads of head_dim channels, positions after the block's prefix tokens.
  void rotary_forward(int l, float* x, int heads);
  void rotary_backward(int l, float* dx, int heads);
  // The FFN up to its activation's output b.g: ffn_in (and the gate) then the activation.
  void ffn_up_forward(int l, const float* inp);
  void linear_forward(int l, int i, float* out, const float* inp);
  // The adaptation methods at linear i of block l (runtime/model/adaptation_method.h).
  // Whether any segment has one at `site`; what segment s's j-th adaptation there is handed
  // over n of its rows (its buffers, the linear's weight, its dropout identity; the caller
  // sets the rows); each unit's adaptations at `site` over its rows of `rows` (the adapted
  // input at kInput, the linear's output otherwise; `inp`, the linear's input rows, read at
  // kBeside); the input with each unit's input-site adaptations applied (plan_.adapted_in),
  // or `inp` itself when none has one.
  bool any_adaptation(int l, int i, LinearSite site) const;
  LinearRows adaptation_rows(std::size_t s, int l, int i, std::size_t j, std::int64_t n) const;
  void adaptations_forward(int l, int i, LinearSite site, float* rows, const float* inp);
  const float* adapted_input(int l, int i, const float* inp);
  // Each unit's block adaptations at `site` of block l: res[its rows] += their terms of y.
  void block_adaptations_forward(int l, BlockSite site, const float* y, float* res);
  void dropout_forward(float* x, float* mask, int block, int site, std::int64_t width);
  // Where segment s's first row (of `width` elements) lies in the dropout streams of the
  // whole batch: after the rows of the sequences before it (data parallelism).
  std::uint64_t first_element(std::size_t s, std::int64_t width) const;
  // Calls f(row, type) for each of segment s's B·S rows (relative to its first): the token
  // type of that position, 0 for prompt tokens and where the segment has no types.
  template <class F>
  void for_each_token_type(std::size_t s, F f) const {
    const Plan::SegmentActs& sa = plan_.segments[s];
    const std::int32_t* types = seg(s).token_types;
    for (int b = 0; b < sa.B; ++b)
      for (int p = 0; p < sa.S; ++p)
        f(static_cast<std::int64_t>(b) * sa.S + p,
          types && p >= sa.P ? types[static_cast<std::size_t>(b) * sa.T + (p - sa.P)] : 0);
  }

  // head_pass.cpp: each segment's head and loss, forward and backward.
  void heads_forward(const float* y, std::vector<SegmentResult>& results);
  // The (B, C) features a sequence head reads: pooled, then BERT's pooler where it has one.
  const float* head_features(std::size_t s, const float* ys);
  // The loss summed over targets (regression: squared errors; multi-label: per-label BCE),
  // and in `counted` the targets and in `denominator` what the mean divides by.
  double head_loss(std::size_t s, std::int64_t& counted, double& denominator);
  void heads_backward(const float* y, float* dy);
  void head_loss_backward(std::size_t s);
  void block_backward(int l, const float* x, bool input_grad);
  void linear_backward(int l, int i, float* dinp, const float* dout, const float* inp,
                       GradMode mode);
  // The gradient of linear i's output before its output-site adaptations from that of its
  // adapted output dout (plan_.adapted_dout, or dout itself where no segment adapts it),
  // with their parameters' gradients; and dinp (=/+= per mode) through the input-site
  // adaptations from the frozen product's input gradient in plan_.adapted_din.
  // Then each segment's products beside the frozen one: their gradients from dout, and
  // their share of dinp (+=, null: not wanted), given x, the rows they read.
  const float* output_adaptations_backward(int l, int i, const float* dout);
  void input_adaptations_backward(int l, int i, float* dinp, const float* inp, GradMode mode);
  void beside_adaptations_backward(int l, int i, float* dinp, const float* dout, const float* x);
  // Each segment's block adaptations at `site` of block l: given dres, the gradient of the
  // residual stream they added into, dy += their share of y's gradient, and their
  // parameters' gradients.
  void block_adaptations_backward(int l, BlockSite site, const float* y, const float* dres,
                                  float* dy);
  void dropout_backward(float* dx, const float* mask, std::int64_t width);
  void attention_backward(int l);
  // After attention_backward: the gradients of the q, k, v products' outputs (through
  // rotary positions and the widening of grouped keys/values). Returns dk's and dv's
  // buffers; dq stays in plan_.dq.
  std::pair<const float*, const float*> qkv_output_grads(int l);
  // From plan_.dg (d activation output) to the FFN input's gradient (=/+= per mode).
  void ffn_up_backward(int l, float* dinp, const float* inp, GradMode mode);
  void embeddings_backward();

  Backend& be_;
  Plan& plan_;
  const FamilyBatch& batch_;
  const ModelWeights& trunk_;
  const spec::Architecture& a_;
  const int C_, F_;
  const std::int64_t N_;
  const bool pre_norm_;
  const bool grouped_;  // fewer key/value heads than query heads
  const bool rotary_;   // rotary positions on q and k
};

}  // namespace scion::runtime::detail
