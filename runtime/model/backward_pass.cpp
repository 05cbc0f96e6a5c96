#include <algorithm>

#include "runtime/model/text_positions.h"
#include "runtime/model/transformer_pass.h"

namespace scion::runtime::detail {

void Pass::norm_backward(float* dinp, const NormWeights& w, const float* dout, const float* inp,
                         const float* mean, const float* rstd, std::int64_t rows, GradMode mode) {
  if (a_.norm_kind == spec::NormKind::kRmsNorm)
    be_.rmsnorm_backward(dinp, w.dweight, dout, inp, w.weight, rstd, rows, C_, mode);
  else
    be_.layernorm_backward(dinp, w.dweight, w.dbias, dout, inp, w.weight, mean, rstd, rows, C_,
                           mode);
}

void Pass::activation_backward(float* dinp, const float* inp, const float* dout,
                               std::int64_t n) {
  if (a_.activation == spec::Activation::kGeluErf)
    be_.gelu_erf_backward(dinp, inp, dout, n);
  else
    be_.gelu_backward(dinp, inp, dout, n);
}

// dinp (=/+= per mode) and the frozen product's weight gradients (only when the trunk
// trains), then each segment's products beside it: their gradients and their share of dinp
// (+=). A null dinp: nothing below needs the input's gradient, so only weight gradients
// are computed.
void Pass::linear_backward(int l, int i, float* dinp, const float* dout, const float* inp,
                           GradMode mode) {
  const LinearWeights& w = trunk_.blocks[l].linear[i];
  dout = output_adaptations_backward(l, i, dout);
  // With input-site adaptations the frozen product saw the adapted input (recomputed here),
  // and its input gradient goes back through them (input_adaptations_backward) into dinp.
  const bool adapted = any_adaptation(l, i, LinearSite::kInput);
  const float* x = adapted ? adapted_input(l, i, inp) : inp;
  float* dx_product = adapted ? plan_.adapted_din : dinp;
  const GradMode product_mode = adapted ? GradMode::kAssign : mode;
  if (w.weight_bf16)  // frozen: no weight gradient
    be_.matmul_backward_bf16_weight(dx_product, w.dbias, dout, w.weight_bf16, 1.0f, N_, w.in, w.out,
                                    product_mode);
  else
    be_.matmul_backward(dx_product, w.dweight, w.dbias, dout, x, w.weight, 1.0f, N_, w.in, w.out,
                        product_mode);
  if (adapted) input_adaptations_backward(l, i, dinp, inp, mode);
  beside_adaptations_backward(l, i, dinp, dout, x);
}

void Pass::beside_adaptations_backward(int l, int i, float* dinp, const float* dout,
                                       const float* x) {
  const LinearWeights& w = trunk_.blocks[l].linear[i];
  for (std::size_t s = 0; s < segment_count(); ++s) {
    const Plan::SegmentActs& sa = plan_.segments[s];
    const auto& adaptations = seg(s).model->blocks[l].adaptations[i];
    for (std::size_t j = 0; j < adaptations.size(); ++j) {
      if (adaptations[j]->site() != LinearSite::kBeside) continue;
      LinearRows r = adaptation_rows(s, l, i, j, sa.rows);
      r.input = x + sa.row0 * w.in;
      adaptations[j]->backward(be_, r, dinp ? dinp + sa.row0 * w.in : nullptr,
                               dout + sa.row0 * w.out);
    }
  }
}

const float* Pass::output_adaptations_backward(int l, int i, const float* dout) {
  if (!any_adaptation(l, i, LinearSite::kOutput)) return dout;
  const int width = trunk_.blocks[l].linear[i].out;
  be_.copy(plan_.adapted_dout, dout, N_ * width);
  for (std::size_t s = 0; s < segment_count(); ++s) {
    const Plan::SegmentActs& sa = plan_.segments[s];
    const auto& adaptations = seg(s).model->blocks[l].adaptations[i];
    float* drows = plan_.adapted_dout + sa.row0 * width;
    const float* from = dout + sa.row0 * width;
    for (std::size_t j = adaptations.size(); j-- > 0;) {  // reversed, as in forward
      if (adaptations[j]->site() != LinearSite::kOutput) continue;
      adaptations[j]->backward(be_, adaptation_rows(s, l, i, j, sa.rows), drows, from);
      from = drows;
    }
  }
  return plan_.adapted_dout;
}

void Pass::input_adaptations_backward(int l, int i, float* dinp, const float* inp, GradMode mode) {
  const int in = trunk_.blocks[l].linear[i].in;
  for (std::size_t s = 0; s < segment_count(); ++s) {
    const Plan::SegmentActs& sa = plan_.segments[s];
    const auto& adaptations = seg(s).model->blocks[l].adaptations[i];
    float* drows = plan_.adapted_din + sa.row0 * in;
    for (std::size_t j = 0; j < adaptations.size(); ++j) {  // one at most (adaptation_method.h)
      if (adaptations[j]->site() != LinearSite::kInput) continue;
      LinearRows r = adaptation_rows(s, l, i, j, sa.rows);
      r.input = inp + sa.row0 * in;
      adaptations[j]->backward(be_, r, drows, drows);
    }
  }
  if (!dinp) return;
  if (mode == GradMode::kAssign)
    be_.copy(dinp, plan_.adapted_din, N_ * in);
  else
    be_.add_inplace(dinp, plan_.adapted_din, 1.0f, N_ * in);
}

void Pass::block_adaptations_backward(int l, BlockSite site, const float* y, const float* dres,
                                      float* dy) {
  const int k = static_cast<int>(site);
  for (std::size_t s = 0; s < segment_count(); ++s) {
    const Plan::SegmentActs& sa = plan_.segments[s];
    const auto& adaptations = seg(s).model->blocks[l].block_adaptations[k];
    for (std::size_t j = 0; j < adaptations.size(); ++j) {
      BlockRows r;
      r.n = sa.rows;
      r.width = C_;
      r.output = y + sa.row0 * C_;
      r.activations = sa.block_activations[l][k][j];
      r.scratch = plan_.adaptation_scratch;
      adaptations[j]->backward(be_, r, dres + sa.row0 * C_, dy + sa.row0 * C_);
    }
  }
}

void Pass::dropout_backward(float* dx, const float* mask, std::int64_t width) {
  if (plan_.dropout <= 0) return;
  be_.dropout_backward(dx, dx, mask, N_ * width);
}

void Pass::attention_backward(int l) {
  Plan::BlockActs& b = plan_.blocks[l];
  for (std::size_t s = 0; s < segment_count(); ++s) {
    Plan::SegmentActs& sa = plan_.segments[s];
    const ModelWeights& m = *seg(s).model;
    const std::int64_t off = sa.row0 * C_;
    const int Pf = m.prefix_tokens(l);
    be_.attention_backward(plan_.dq + off, plan_.dk + off, plan_.dv + off,
                           Pf ? sa.dprefix_k : nullptr, Pf ? sa.dprefix_v : nullptr,
                           plan_.datt + off, b.probs + units(l)[s].probs0, b.q + off, b.k + off,
                           b.v + off, Pf ? sa.prefix_k[l] : nullptr, Pf ? sa.prefix_v[l] : nullptr,
                           sa.B, sa.S, Pf, C_, a_.heads);
    std::int64_t row = 0;
    for (const PrefixWeights& p : m.blocks[l].prefixes) {
      const std::int64_t n = static_cast<std::int64_t>(p.tokens) * C_;
      if (p.dkeys) be_.add_inplace(p.dkeys, sa.dprefix_k + row * C_, 1.0f, n);
      if (p.dvalues) be_.add_inplace(p.dvalues, sa.dprefix_v + row * C_, 1.0f, n);
      row += p.tokens;
    }
  }
}

void Pass::rotary_backward(int l, float* dx, int heads) {
  const std::int64_t width = static_cast<std::int64_t>(heads) * a_.head_dim();
  for (std::size_t s = 0; s < segment_count(); ++s) {
    const Plan::SegmentActs& sa = plan_.segments[s];
    float* rows = dx + sa.row0 * width;
    be_.rope_backward(rows, rows, sa.B, sa.S, heads, a_.head_dim(),
                      seg(s).model->prefix_tokens(l), a_.rope_theta, a_.rope_scale);
  }
}

std::pair<const float*, const float*> Pass::qkv_output_grads(int l) {
  float* dk = plan_.dk;
  float* dv = plan_.dv;
  if (grouped_) {
    const int groups = a_.heads / a_.key_value_heads();
    be_.repeat_kv_backward(plan_.dkv_k, plan_.dk, N_, a_.key_value_heads(), groups, a_.head_dim());
    be_.repeat_kv_backward(plan_.dkv_v, plan_.dv, N_, a_.key_value_heads(), groups, a_.head_dim());
    dk = plan_.dkv_k;
    dv = plan_.dkv_v;
  }
  if (rotary_) {
    rotary_backward(l, plan_.dq, a_.heads);
    rotary_backward(l, dk, a_.key_value_heads());
  }
  return {dk, dv};
}

void Pass::ffn_up_backward(int l, float* dinp, const float* inp, GradMode mode) {
  const Plan::BlockActs& b = plan_.blocks[l];
  if (!a_.gated_ffn()) {
    activation_backward(plan_.dh, b.h, plan_.dg, N_ * F_);
    linear_backward(l, kFfnIn, dinp, plan_.dh, inp, mode);
    return;
  }
  be_.swiglu_backward(plan_.dgate, plan_.dh, plan_.dg, b.gate, b.h, N_ * F_);
  linear_backward(l, kFfnIn, dinp, plan_.dh, inp, mode);
  linear_backward(l, kFfnGate, dinp, plan_.dgate, inp, GradMode::kAccumulate);
}

// On entry plan_.dx holds d loss / d (block output); on exit, d loss / d (block input x)
// when `input_grad`. Without it (the lowest block any gradient reaches, embeddings
// frozen) the q/k/v products skip their input gradients, as the first norm does when its
// weights are frozen: a frozen trunk's bottom block needs only its adapters' gradients.
void Pass::block_backward(int l, const float* x, bool input_grad) {
  Plan::BlockActs& b = plan_.blocks[l];
  const BlockWeights& w = trunk_.blocks[l];
  float* dx = plan_.dx;
  float* dtmp = plan_.dtmp;
  float* dbranch = plan_.dbranch;
  // d res2: the stream itself (pre-norm) or through the output norm (post-norm).
  float* dres2 = dx;
  if (!pre_norm_) {
    norm_backward(dtmp, w.ln2, dx, b.res2, b.ln2_mean, b.ln2_rstd, N_, GradMode::kAssign);
    dres2 = dtmp;
  }
  be_.copy(dbranch, dres2, N_ * C_);
  block_adaptations_backward(l, BlockSite::kAfterFfn, b.f, dres2, dbranch);
  dropout_backward(dbranch, b.f_mask, C_);
  linear_backward(l, kFfnOut, plan_.dg, dbranch, b.g, GradMode::kAssign);
  if (pre_norm_) {
    ffn_up_backward(l, dtmp, b.ln2, GradMode::kAssign);
    norm_backward(dx, w.ln2, dtmp, b.res1, b.ln2_mean, b.ln2_rstd, N_, GradMode::kAccumulate);
  } else {
    ffn_up_backward(l, dtmp, b.ln1, GradMode::kAccumulate);  // d ln1
    norm_backward(dx, w.ln1, dtmp, b.res1, b.ln1_mean, b.ln1_rstd, N_, GradMode::kAssign);
  }
  // dx = d res1 now.
  be_.copy(dbranch, dx, N_ * C_);
  block_adaptations_backward(l, BlockSite::kAfterAttention, b.o, dx, dbranch);
  dropout_backward(dbranch, b.o_mask, C_);
  linear_backward(l, kAttnO, plan_.datt, dbranch, b.att, GradMode::kAssign);
  attention_backward(l);
  const auto [dk, dv] = qkv_output_grads(l);
  const bool norm_trains = w.ln1.dweight || w.ln1.dbias;
  if (pre_norm_) {
    float* dln1 = input_grad || norm_trains ? dtmp : nullptr;
    linear_backward(l, kAttnQ, dln1, plan_.dq, b.ln1, GradMode::kAssign);
    linear_backward(l, kAttnK, dln1, dk, b.ln1, GradMode::kAccumulate);
    linear_backward(l, kAttnV, dln1, dv, b.ln1, GradMode::kAccumulate);
    if (dln1)
      norm_backward(dx, w.ln1, dtmp, x, b.ln1_mean, b.ln1_rstd, N_, GradMode::kAccumulate);
  } else {
    float* dinput = input_grad ? dx : nullptr;
    linear_backward(l, kAttnQ, dinput, plan_.dq, x, GradMode::kAccumulate);
    linear_backward(l, kAttnK, dinput, dk, x, GradMode::kAccumulate);
    linear_backward(l, kAttnV, dinput, dv, x, GradMode::kAccumulate);
  }
}

void Pass::embeddings_backward() {
  float* demb = plan_.dx;
  if (!pre_norm_) {
    norm_backward(plan_.dtmp, trunk_.emb_ln, plan_.dx, plan_.emb, plan_.embn_mean,
                  plan_.embn_rstd, N_, GradMode::kAssign);
    demb = plan_.dtmp;
  }
  dropout_backward(demb, plan_.emb_mask, C_);
  if (trunk_.dtype_emb)
    for (std::size_t s = 0; s < segment_count(); ++s)
      for_each_token_type(s, [&](std::int64_t row, int type) {
        be_.add_inplace(trunk_.dtype_emb + type * C_, demb + (plan_.segments[s].row0 + row) * C_,
                        1.0f, C_);
      });
  for (std::size_t s = 0; s < segment_count(); ++s) {
    const ModelWeights& m = *seg(s).model;
    Plan::SegmentActs& sa = plan_.segments[s];
    float* dpositions = m.dpos_emb ? m.dpos_emb + position_shift(m) * C_ : nullptr;
    be_.embedding_backward(m.dtok_emb, dpositions, sa.P ? sa.dprompt : nullptr, demb + sa.row0 * C_,
                           sa.tokens, sa.B, sa.T, sa.P, C_);
    std::int64_t row = 0;
    for (const PromptWeights& p : m.prompts) {
      if (p.dembeddings)
        be_.add_inplace(p.dembeddings, sa.dprompt + row * C_, 1.0f,
                        static_cast<std::int64_t>(p.tokens) * C_);
      row += p.tokens;
    }
  }
}

void Pass::backward() {
  int stop = a_.layers;  // lowest block any segment needs gradients in
  for (std::size_t s = 0; s < segment_count(); ++s)
    stop = std::min(stop, seg(s).model->lowest_trained_block);
  auto block_input = [&](int l) -> const float* {
    if (l == 0) return pre_norm_ ? plan_.emb : plan_.embn;
    if (plan_.recompute) return plan_.block_out[l - 1];
    return pre_norm_ ? plan_.blocks[l - 1].res2 : plan_.blocks[l - 1].ln2;
  };
  const float* y = pre_norm_ ? plan_.lnf : block_input(a_.layers);
  if (pre_norm_) {
    heads_backward(y, plan_.dtmp);
    norm_backward(plan_.dx, trunk_.ln_f, plan_.dtmp, block_input(a_.layers), plan_.lnf_mean,
                  plan_.lnf_rstd, N_, GradMode::kAssign);
  } else {
    heads_backward(y, plan_.dx);
  }
  for (int l = a_.layers - 1; l >= std::max(stop, 0); --l) {
    // The shared block buffers still hold the top block's activations from forward().
    if (plan_.recompute && l < a_.layers - 1) block_forward(l, block_input(l));
    block_backward(l, block_input(l), /*input_grad=*/l > stop);
  }
  if (stop < 0) embeddings_backward();
}

}  // namespace scion::runtime::detail
