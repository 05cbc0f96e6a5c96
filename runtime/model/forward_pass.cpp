#include <string>

#include "runtime/model/kv_cache.h"
#include "runtime/model/text_positions.h"
#include "runtime/model/transformer_pass.h"
#include "runtime/op_types.h"

namespace scion::runtime::detail {

void Pass::norm_forward(float* out, float* mean, float* rstd, const float* inp,
                        const NormWeights& w, std::int64_t rows) {
  if (a_.norm_kind == spec::NormKind::kRmsNorm)
    be_.rmsnorm_forward(out, rstd, inp, w.weight, rows, C_, a_.norm_eps);
  else if (a_.norm_eps == kLayerNormEps)
    be_.layernorm_forward(out, mean, rstd, inp, w.weight, w.bias, rows, C_);
  else
    be_.layernorm_forward_eps(out, mean, rstd, inp, w.weight, w.bias, rows, C_, a_.norm_eps);
}

void Pass::activation_forward(float* out, const float* inp, std::int64_t n) {
  if (a_.activation == spec::Activation::kGeluErf)
    be_.gelu_erf_forward(out, inp, n);
  else
    be_.gelu_forward(out, inp, n);
}

void Pass::prepare_segment_inputs() {
  for (std::size_t s = 0; s < segment_count(); ++s) {
    const ModelWeights& m = *seg(s).model;
    Plan::SegmentActs& sa = plan_.segments[s];
    std::int64_t offset = 0;
    for (const PromptWeights& p : m.prompts) {
      if (sa.P == 0) break;  // the cache holds them (prompt_rows)
      be_.copy(sa.prompt + offset * C_, p.embeddings, static_cast<std::int64_t>(p.tokens) * C_);
      offset += p.tokens;
    }
    for (int l = 0; l < a_.layers && !seg(s).cache; ++l) {
      std::int64_t row = 0;
      for (const PrefixWeights& p : m.blocks[l].prefixes) {
        be_.copy(sa.prefix_k[l] + row * C_, p.keys, static_cast<std::int64_t>(p.tokens) * C_);
        be_.copy(sa.prefix_v[l] + row * C_, p.values, static_cast<std::int64_t>(p.tokens) * C_);
        row += p.tokens;
      }
    }
    sa.tokens = upload(sa.tokens_buffer, seg(s).tokens, static_cast<std::int64_t>(sa.B) * sa.T);
    sa.lengths = sa.attn_lengths = sa.targets = nullptr;
    sa.values = nullptr;
    if (seg(s).lengths) {
      sa.lengths = upload(sa.lengths_buffer, seg(s).lengths, sa.B);
      sa.host_attn_lengths.clear();
      for (int b = 0; b < sa.B; ++b) sa.host_attn_lengths.push_back(sa.P + seg(s).lengths[b]);
      sa.attn_lengths = upload(sa.attn_lengths_buffer, sa.host_attn_lengths.data(), sa.B);
    }
    if (seg(s).values) {
      const std::int64_t n = static_cast<std::int64_t>(sa.B) * m.classifier.linear.out;
      be_.copy_to_device(sa.values_buffer, seg(s).values,
                         static_cast<std::size_t>(n) * sizeof(float));
      sa.values = sa.values_buffer;
    }
    if (!seg(s).targets) continue;
    const bool head = m.objective == spec::Objective::kClassification;
    if (head && !m.classifier.per_token()) {
      sa.targets = upload(sa.targets_buffer, seg(s).targets, sa.B);
    } else {
      // Per position, after the segment's prompt tokens (which take no loss).
      sa.host_lm_targets.assign(static_cast<std::size_t>(sa.rows), kIgnoreIndex);
      for (int b = 0; b < sa.B; ++b)
        for (int t = 0; t < sa.T; ++t)
          sa.host_lm_targets[static_cast<std::size_t>(b) * sa.S + sa.P + t] =
              seg(s).targets[static_cast<std::size_t>(b) * sa.T + t];
      sa.targets = upload(sa.targets_buffer, sa.host_lm_targets.data(), sa.rows);
    }
  }
}

std::uint64_t Pass::first_element(std::size_t s, std::int64_t width) const {
  // Rows of the batch's sequences before this segment's first (Segment::first_row).
  const std::int64_t before = seg(s).first_row * plan_.segments[s].S;
  return static_cast<std::uint64_t>(before * width);
}

void Pass::dropout_forward(float* x, float* mask, int block, int site, std::int64_t width) {
  if (plan_.dropout <= 0) return;
  for (std::size_t s = 0; s < segment_count(); ++s) {
    const Plan::SegmentActs& sa = plan_.segments[s];
    be_.dropout_forward(x + sa.row0 * width, mask + sa.row0 * width, x + sa.row0 * width,
                        sa.rows * width, plan_.dropout, seg(s).dropout_seed,
                        site_stream(block, site), first_element(s, width));
  }
}

void Pass::embeddings_forward() {
  for (const Unit& u : plan_.stages.front()) {
    const Plan::SegmentActs& sa = plan_.segments[u.segment];
    // A shifted text (runtime/model/text_positions.h) reads the position table from there, and
    // a cached sequence continues after its cached positions.
    const Segment& sg = seg(u.segment);
    const std::int64_t first = position_shift(*sg.model) + first_position(sg);
    const float* positions = trunk_.pos_emb ? trunk_.pos_emb + first * C_ : nullptr;
    be_.embedding_forward(plan_.emb + u.row0 * C_, sa.tokens, trunk_.tok_emb, positions,
                          sa.P ? sa.prompt : nullptr, sa.B, sa.T, sa.P, C_);
  }
  // BERT's token types: each position's row (type 0 for single texts and prompt tokens).
  if (trunk_.type_emb)
    for (const Unit& u : plan_.stages.front())
      for_each_token_type(u.segment, [&](std::int64_t row, int type) {
        be_.add_inplace(plan_.emb + (u.row0 + row) * C_, trunk_.type_emb + type * C_, 1.0f, C_);
      });
  dropout_forward(plan_.emb, plan_.emb_mask, -1, kEmbeddingSite, C_);
  if (!pre_norm_)
    norm_forward(plan_.embn, plan_.embn_mean, plan_.embn_rstd, plan_.emb, trunk_.emb_ln,
               plan_.stage_rows.front());
}

bool Pass::any_adaptation(int l, int i, LinearSite site) const {
  for (std::size_t s = 0; s < segment_count(); ++s)
    for (const auto& adaptation : seg(s).model->blocks[l].adaptations[i])
      if (adaptation->site() == site) return true;
  return false;
}

LinearRows Pass::adaptation_rows(std::size_t s, int l, int i, std::size_t j, std::int64_t n) const {
  const LinearWeights& w = trunk_.blocks[l].linear[i];
  LinearRows r;
  r.n = n;
  r.in = w.in;
  r.out = w.out;
  r.weight = w.weight;
  r.activations = plan_.segments[s].adaptation_activations[l][i][j];
  r.scratch = plan_.adaptation_scratch;
  r.dropout_seed = seg(s).dropout_seed;
  r.position = static_cast<int>(j);
  r.first_element = first_element(s, w.in);
  return r;
}

void Pass::adaptations_forward(int l, int i, LinearSite site, float* rows, const float* inp) {
  const LinearWeights& w = trunk_.blocks[l].linear[i];
  const int width = site == LinearSite::kInput ? w.in : w.out;
  for (const Unit& u : units(l)) {
    const auto& adaptations = seg(u.segment).model->blocks[l].adaptations[i];
    for (std::size_t j = 0; j < adaptations.size(); ++j) {
      if (adaptations[j]->site() != site) continue;
      // In training the unit is its whole segment, so it starts where the segment does.
      LinearRows r = adaptation_rows(u.segment, l, i, j, u.rows);
      r.rows = rows + u.row0 * width;
      if (site == LinearSite::kBeside) r.input = inp + u.row0 * w.in;
      adaptations[j]->forward(be_, r);
    }
  }
}

const float* Pass::adapted_input(int l, int i, const float* inp) {
  if (!any_adaptation(l, i, LinearSite::kInput)) return inp;
  const int in = trunk_.blocks[l].linear[i].in;
  be_.copy(plan_.adapted_in, inp, rows_at(l) * in);
  adaptations_forward(l, i, LinearSite::kInput, plan_.adapted_in, nullptr);
  return plan_.adapted_in;
}

// The frozen product once over all rows (of inputs through the input-site adaptations),
// then each unit's products beside it on its own rows, then the output-site adaptations.
void Pass::linear_forward(int l, int i, float* out, const float* inp) {
  const LinearWeights& w = trunk_.blocks[l].linear[i];
  inp = adapted_input(l, i, inp);
  if (w.weight_bf16)
    be_.matmul_forward_bf16_weight(out, inp, w.weight_bf16, w.bias, rows_at(l), w.in, w.out);
  else
    be_.matmul_forward(out, inp, w.weight, w.bias, rows_at(l), w.in, w.out);
  adaptations_forward(l, i, LinearSite::kBeside, out, inp);
  adaptations_forward(l, i, LinearSite::kOutput, out, nullptr);
}

void Pass::block_adaptations_forward(int l, BlockSite site, const float* y, float* res) {
  const int k = static_cast<int>(site);
  for (const Unit& u : units(l)) {
    const auto& adaptations = seg(u.segment).model->blocks[l].block_adaptations[k];
    for (std::size_t j = 0; j < adaptations.size(); ++j) {
      BlockRows r;
      r.n = u.rows;
      r.width = C_;
      r.output = y + u.row0 * C_;
      r.residual = res + u.row0 * C_;
      r.delta = plan_.adapter_out + u.row0 * C_;
      r.activations = plan_.segments[u.segment].block_activations[l][k][j];
      r.scratch = plan_.adaptation_scratch;
      adaptations[j]->forward(be_, r);
    }
  }
}

void Pass::rotary_forward(int l, float* x, int heads) {
  const std::int64_t width = static_cast<std::int64_t>(heads) * a_.head_dim();
  for (const Unit& u : units(l)) {
    const Plan::SegmentActs& sa = plan_.segments[u.segment];
    float* rows = x + u.row0 * width;
    be_.rope_forward(rows, rows, sa.B, sa.S, heads, a_.head_dim(), keys_before(seg(u.segment), l),
                     a_.rope_theta, a_.rope_scale);
  }
}

void Pass::qkv_forward(int l, const float* inp) {
  Plan::BlockActs& b = plan_.blocks[l];
  float* k = grouped_ ? b.kv_k : b.k;
  float* v = grouped_ ? b.kv_v : b.v;
  linear_forward(l, kAttnQ, b.q, inp);
  linear_forward(l, kAttnK, k, inp);
  linear_forward(l, kAttnV, v, inp);
  if (rotary_) {
    rotary_forward(l, b.q, a_.heads);
    rotary_forward(l, k, a_.key_value_heads());
  }
  if (grouped_) {
    const int groups = a_.heads / a_.key_value_heads();
    be_.repeat_kv_forward(b.k, k, rows_at(l), a_.key_value_heads(), groups, a_.head_dim());
    be_.repeat_kv_forward(b.v, v, rows_at(l), a_.key_value_heads(), groups, a_.head_dim());
  }
}

void Pass::ffn_up_forward(int l, const float* inp) {
  Plan::BlockActs& b = plan_.blocks[l];
  linear_forward(l, kFfnIn, b.h, inp);
  if (a_.gated_ffn()) {
    linear_forward(l, kFfnGate, b.gate, inp);
    be_.swiglu_forward(b.g, b.gate, b.h, rows_at(l) * F_);
  } else {
    activation_forward(b.g, b.h, rows_at(l) * F_);
  }
}

const float* Pass::block_forward(int l, const float* x) {
  Plan::BlockActs& b = plan_.blocks[l];
  const BlockWeights& w = trunk_.blocks[l];
  const std::int64_t N_ = rows_at(l);  // shadows the batch's rows: this block's units
  const float* attn_in = x;
  if (pre_norm_) {
    norm_forward(b.ln1, b.ln1_mean, b.ln1_rstd, x, w.ln1, N_);
    attn_in = b.ln1;
  }
  qkv_forward(l, attn_in);
  for (const Unit& u : units(l)) {
    const Plan::SegmentActs& sa = plan_.segments[u.segment];
    const std::int64_t off = u.row0 * C_;
    KvCache* cache = seg(u.segment).cache;
    // The keys before the segment's own: its prefix, or everything its cache holds.
    const int Pf = keys_before(seg(u.segment), l);
    const float* prefix_k = cache ? cache->keys(l) : sa.prefix_k[l];
    const float* prefix_v = cache ? cache->values(l) : sa.prefix_v[l];
    be_.attention_forward(b.att + off, b.probs + u.probs0, b.q + off, b.k + off, b.v + off,
                          Pf ? prefix_k : nullptr, Pf ? prefix_v : nullptr, sa.attn_lengths, sa.B,
                          sa.S, Pf, C_, a_.heads, a_.kind == spec::ArchitectureKind::kDecoder,
                          a_.sliding_window);
    if (!cache) continue;
    // The new positions' keys and values go after the cached ones (forward() advances).
    be_.copy(cache->keys(l) + static_cast<std::int64_t>(Pf) * C_, b.k + off, u.rows * C_);
    be_.copy(cache->values(l) + static_cast<std::int64_t>(Pf) * C_, b.v + off, u.rows * C_);
  }
  linear_forward(l, kAttnO, b.o, b.att);
  dropout_forward(b.o, b.o_mask, l, kAttentionSite, C_);
  be_.residual_forward(b.res1, x, b.o, N_ * C_);
  block_adaptations_forward(l, BlockSite::kAfterAttention, b.o, b.res1);
  const float* ffn_in;
  if (pre_norm_) {
    norm_forward(b.ln2, b.ln2_mean, b.ln2_rstd, b.res1, w.ln2, N_);
    ffn_in = b.ln2;
  } else {
    norm_forward(b.ln1, b.ln1_mean, b.ln1_rstd, b.res1, w.ln1, N_);
    ffn_in = b.ln1;
  }
  ffn_up_forward(l, ffn_in);
  linear_forward(l, kFfnOut, b.f, b.g);
  dropout_forward(b.f, b.f_mask, l, kFfnSite, C_);
  be_.residual_forward(b.res2, pre_norm_ ? b.res1 : b.ln1, b.f, N_ * C_);
  block_adaptations_forward(l, BlockSite::kAfterFfn, b.f, b.res2);
  if (pre_norm_) return b.res2;
  norm_forward(b.ln2, b.ln2_mean, b.ln2_rstd, b.res2, w.ln2, N_);
  return b.ln2;
}

void Pass::forward(std::vector<SegmentResult>& results) {
  prepare_segment_inputs();
  embeddings_forward();
  const float* x = pre_norm_ ? plan_.emb : plan_.embn;
  for (int l = 0; l < a_.layers; ++l) {
    if (plan_.inference) {
      // Each unit starts from its parent's rows; the block buffers are then free to reuse.
      const Stage& parents = plan_.stages[l];
      for (const Unit& u : units(l))
        be_.copy(plan_.in + u.row0 * C_, x + parents[u.parent].row0 * C_, u.rows * C_);
      x = plan_.in;
    }
    x = block_forward(l, x);
    if (plan_.recompute) {  // the block buffers are the next block's: keep the output
      be_.copy(plan_.block_out[l], x, N_ * C_);
      x = plan_.block_out[l];
    }
  }
  if (pre_norm_) {
    norm_forward(plan_.lnf, plan_.lnf_mean, plan_.lnf_rstd, x, trunk_.ln_f, plan_.stage_rows.back());
    x = plan_.lnf;
  }
  heads_forward(x, results);
  for (std::size_t s = 0; s < segment_count(); ++s)
    if (KvCache* cache = seg(s).cache) cache->advance(plan_.segments[s].S);
}

}  // namespace scion::runtime::detail
