#include "runtime/model/batch_plan.h"

#include <algorithm>
#include <initializer_list>
#include <tuple>

#include "runtime/model/kv_cache.h"

namespace scion::runtime::detail {
namespace {

// Builds the arena table for the batch and hands out pointers.
class Layout {
 public:
  void add(const std::string& name, std::int64_t numel, float** slot) {
    if (numel <= 0) return;
    table_.push_back({name, {numel}, DType::kF32});
    slots_.push_back(slot);
  }
  // Token ids, lengths and targets share the arena: an int32 takes a float's 4 bytes.
  void add_ints(const std::string& name, std::int64_t numel, std::int32_t** slot) {
    static_assert(sizeof(std::int32_t) == sizeof(float));
    if (numel <= 0) return;
    table_.push_back({name, {numel}, DType::kF32});
    slots_.push_back(reinterpret_cast<float**>(slot));
  }
  // The previous batch's arena goes first, so that the two are never held at once.
  Status finish(Arena& arena, Backend& backend) {
    arena = Arena();
    auto fresh = Arena::create(table_, backend, "the activations of a batch");
    if (!fresh) return fresh.status();
    arena = std::move(*fresh);
    for (std::size_t i = 0; i < table_.size(); ++i) *slots_[i] = arena.view(table_[i].name).f32();
    return Status::ok();
  }

 private:
  std::vector<ViewSpec> table_;
  std::vector<float**> slots_;
};

// The shape an adaptation on linear w of segment sa sizes its buffers for.
LinearShape adaptation_shape(const BatchPlan& plan, const FamilyBatch& batch,
                             const BatchPlan::SegmentActs& sa, const LinearWeights& w) {
  return {sa.rows, w.in, w.out, batch.training, !plan.inference};
}

// Each entry of `scratch` at least as wide as the same entry of `asks`.
void widen(std::vector<std::int64_t>& scratch, const std::vector<std::int64_t>& asks) {
  if (scratch.size() < asks.size()) scratch.resize(asks.size(), 0);
  for (std::size_t k = 0; k < asks.size(); ++k) scratch[k] = std::max(scratch[k], asks[k]);
}

// What segment s's block adaptations ask for (SegmentActs::block_activations), widening the
// shared `scratch`.
void add_block_adaptation_buffers(BatchPlan& plan, std::size_t s, const ModelWeights& m,
                                  Layout& layout, std::vector<std::int64_t>& scratch) {
  BatchPlan::SegmentActs& sa = plan.segments[s];
  const BlockShape shape{sa.rows, m.arch.width, !plan.inference};
  sa.block_activations.assign(m.blocks.size(), {});
  for (std::size_t l = 0; l < m.blocks.size(); ++l)
    for (int site = 0; site < kBlockSiteCount; ++site) {
      const auto& adaptations = m.blocks[l].block_adaptations[site];
      auto& buffers = sa.block_activations[l][site];
      buffers.assign(adaptations.size(), {});
      for (std::size_t j = 0; j < adaptations.size(); ++j) {
        const std::vector<std::int64_t> sizes = adaptations[j]->activation_sizes(shape);
        buffers[j].assign(sizes.size(), nullptr);
        for (std::size_t k = 0; k < sizes.size(); ++k)
          layout.add("seg." + std::to_string(s) + ".blk." + std::to_string(l) + ".site." +
                         std::to_string(site) + ".adaptation." + std::to_string(j) + "." +
                         std::to_string(k),
                     sizes[k], &buffers[j][k]);
        widen(scratch, adaptations[j]->scratch_sizes(shape));
      }
    }
}

// The adaptation methods' buffers: the plan's adapted input and gradients
// (BatchPlan::adapted_in, adapted_dout, adapted_din) sized for the widest linear any
// segment adapts at each site, what each segment's adaptations ask for
// (SegmentActs::adaptation_activations), and their shared scratch, each entry the widest
// ask (BatchPlan::adaptation_scratch).
void add_adaptation_buffers(BatchPlan& plan, const FamilyBatch& batch, std::int64_t widest,
                            Layout& layout) {
  std::int64_t max_in = 0, max_out = 0;
  std::vector<std::int64_t> scratch;
  for (std::size_t s = 0; s < batch.segments.size(); ++s) {
    const ModelWeights& m = *batch.segments[s].model;
    BatchPlan::SegmentActs& sa = plan.segments[s];
    sa.adaptation_activations.assign(m.blocks.size(), {});
    for (std::size_t l = 0; l < m.blocks.size(); ++l)
      for (int i = 0; i < kLinearCount; ++i) {
        const auto& adaptations = m.blocks[l].adaptations[i];
        auto& buffers = sa.adaptation_activations[l][i];
        buffers.assign(adaptations.size(), {});
        const LinearWeights& w = m.blocks[l].linear[i];
        const LinearShape shape = adaptation_shape(plan, batch, sa, w);
        for (std::size_t j = 0; j < adaptations.size(); ++j) {
          const LinearSite site = adaptations[j]->site();
          if (site == LinearSite::kInput) max_in = std::max<std::int64_t>(max_in, w.in);
          if (site == LinearSite::kOutput) max_out = std::max<std::int64_t>(max_out, w.out);
          const std::vector<std::int64_t> sizes = adaptations[j]->activation_sizes(shape);
          buffers[j].assign(sizes.size(), nullptr);
          for (std::size_t k = 0; k < sizes.size(); ++k)
            layout.add("seg." + std::to_string(s) + ".blk." + std::to_string(l) + "." +
                           kLinearStems[i] + ".adaptation." + std::to_string(j) + "." +
                           std::to_string(k),
                       sizes[k], &buffers[j][k]);
          widen(scratch, adaptations[j]->scratch_sizes(shape));
        }
      }
    add_block_adaptation_buffers(plan, s, m, layout, scratch);
  }
  plan.adaptation_scratch.assign(scratch.size(), nullptr);
  for (std::size_t k = 0; k < scratch.size(); ++k)
    layout.add("adaptation_scratch." + std::to_string(k), scratch[k], &plan.adaptation_scratch[k]);
  layout.add("adapted_in", (plan.inference ? widest : plan.N) * max_in, &plan.adapted_in);
  if (plan.inference) return;
  layout.add("adapted_dout", plan.N * max_out, &plan.adapted_dout);
  layout.add("adapted_din", plan.N * max_in, &plan.adapted_din);
}

}  // namespace

bool is_inference(const FamilyBatch& batch) {
  if (batch.training) return false;
  for (const Segment& seg : batch.segments)
    if (seg.targets || seg.values) return false;
  return true;
}

std::string batch_signature(const FamilyBatch& batch) {
  std::string s = batch.training ? (batch.recompute ? "R" : "T") : is_inference(batch) ? "I" : "E";
  const bool inference = is_inference(batch);
  auto add = [&s](std::int64_t v) {
    s += std::to_string(v);
    s += ',';
  };
  if (batch.share_identical) {  // which units the segments share
    std::vector<int> final_unit;
    for (const Stage& stage : build_stages(batch, final_unit)) {
      s += '#';
      for (const Unit& u : stage) {
        add(u.segment);
        add(u.parent);
      }
    }
  }
  for (const Segment& seg : batch.segments) {
    const ModelWeights& m = *seg.model;
    s += '|';
    add(seg.batch);
    add(seg.length);
    add(static_cast<int>(m.objective));
    add(m.has_classifier ? m.classifier.linear.out : 0);
    add(m.has_classifier ? static_cast<int>(m.classifier.task) : 0);
    add(prompt_rows(seg));
    add(seg.cache ? seg.cache->capacity() : 0);
    add(seg.last_position_logits);
    for (const BlockWeights& b : m.blocks) {
      s += '/';
      for (const PrefixWeights& p : b.prefixes) add(p.tokens);
      for (int i = 0; i < kLinearCount; ++i) {
        s += 'a';
        const LinearShape shape{seg.batch * (prompt_rows(seg) + seg.length), b.linear[i].in,
                                b.linear[i].out, batch.training, !inference};
        for (const auto& adaptation : b.adaptations[i]) {
          add(static_cast<int>(adaptation->site()));
          for (const std::int64_t n : adaptation->activation_sizes(shape)) add(n);
          s += 's';
          for (const std::int64_t n : adaptation->scratch_sizes(shape)) add(n);
        }
      }
      const BlockShape shape{seg.batch * (prompt_rows(seg) + seg.length), m.arch.width, !inference};
      for (const auto& adaptations : b.block_adaptations) {
        s += 'b';
        for (const auto& adaptation : adaptations) {
          for (const std::int64_t n : adaptation->activation_sizes(shape)) add(n);
          s += 's';
          for (const std::int64_t n : adaptation->scratch_sizes(shape)) add(n);
        }
      }
    }
  }
  return s;
}

namespace {

// Each segment's rows: where they start in the batch and how many (prompt rows first).
void place_segments(BatchPlan& plan, const FamilyBatch& batch) {
  plan.segments.assign(batch.segments.size(), BatchPlan::SegmentActs{});
  plan.N = 0;
  for (std::size_t s = 0; s < batch.segments.size(); ++s) {
    const Segment& seg = batch.segments[s];
    BatchPlan::SegmentActs& sa = plan.segments[s];
    sa.B = seg.batch;
    sa.T = seg.length;
    sa.P = prompt_rows(seg);
    sa.S = sa.P + sa.T;
    sa.row0 = plan.N;
    sa.rows = static_cast<std::int64_t>(sa.B) * sa.S;
    plan.N += sa.rows;
  }
}

// The blocks' activations and the backward pass's scratch. Returns the rows of the
// widest stage (inference sizes its one set of block buffers for it).
std::int64_t lay_out_blocks(BatchPlan& plan, const FamilyBatch& batch, Layout& layout) {
  using Plan = BatchPlan;
  const spec::Architecture& a = batch.segments[0].model->arch;
  const std::int64_t C = a.width, F = a.ffn_width, L = a.layers, N = plan.N;
  // Grouped-query attention's narrower keys and values, the gated FFN's gate, and the
  // layer norms' means (RMSNorm has none): zero-sized buffers are not laid out.
  const std::int64_t Ckv = a.key_value_heads() != a.heads ? a.kv_width() : 0;
  const std::int64_t Fg = a.gated_ffn() ? F : 0;
  const std::int64_t has_mean = a.norm_kind == spec::NormKind::kLayerNorm ? 1 : 0;
  // Training keeps every block's activations for backward; inference reuses one set,
  // sized for the widest stage, and so does recomputation, which keeps block outputs.
  plan.recompute = batch.training && batch.recompute;
  plan.blocks.assign(L, Plan::BlockActs{});
  plan.block_out.assign(L, nullptr);
  const bool one_block_set = plan.inference || plan.recompute;
  const int planned_blocks = one_block_set ? 1 : L;
  std::int64_t widest = 0;
  for (int l = 0; l < L; ++l) widest = std::max(widest, plan.stage_rows[l + 1]);
  for (int l = 0; l < planned_blocks; ++l) {
    Plan::BlockActs& b = plan.blocks[l];
    const std::string p = "blk." + std::to_string(l) + ".";
    const std::int64_t n_rows = plan.inference ? widest : N;
    std::int64_t probs = 0;
    for (int k = 0; k < L; ++k)
      if (one_block_set || k == l)
        probs = std::max(probs, stage_probs(plan.stages[k + 1], batch, k));
    for (auto [name, slot, n] : std::initializer_list<std::tuple<const char*, float**, std::int64_t>>{
             {"ln1", &b.ln1, n_rows * C}, {"ln1_mean", &b.ln1_mean, has_mean * n_rows},
             {"ln1_rstd", &b.ln1_rstd, n_rows}, {"q", &b.q, n_rows * C}, {"k", &b.k, n_rows * C},
             {"v", &b.v, n_rows * C}, {"kv_k", &b.kv_k, n_rows * Ckv},
             {"kv_v", &b.kv_v, n_rows * Ckv}, {"att", &b.att, n_rows * C},
             {"probs", &b.probs, probs}, {"o", &b.o, n_rows * C}, {"res1", &b.res1, n_rows * C},
             {"ln2", &b.ln2, n_rows * C}, {"ln2_mean", &b.ln2_mean, has_mean * n_rows},
             {"ln2_rstd", &b.ln2_rstd, n_rows}, {"h", &b.h, n_rows * F},
             {"gate", &b.gate, n_rows * Fg}, {"g", &b.g, n_rows * F}, {"f", &b.f, n_rows * C},
             {"res2", &b.res2, n_rows * C}})
      layout.add(p + name, n, slot);
    if (plan.dropout > 0) {
      layout.add(p + "o_mask", N * C, &b.o_mask);
      layout.add(p + "f_mask", N * C, &b.f_mask);
    }
  }
  if (plan.recompute)
    for (int l = 0; l < L; ++l)
      layout.add("blk." + std::to_string(l) + ".out", N * C, &plan.block_out[l]);
  if (plan.inference) {
    layout.add("in", widest * C, &plan.in);
    layout.add("adapter_out", widest * C, &plan.adapter_out);
  } else {
    for (auto [name, slot, n] : std::initializer_list<std::tuple<const char*, float**, std::int64_t>>{
             {"dx", &plan.dx, N * C}, {"dtmp", &plan.dtmp, N * C}, {"dq", &plan.dq, N * C},
             {"dk", &plan.dk, N * C}, {"dv", &plan.dv, N * C}, {"datt", &plan.datt, N * C},
             {"dbranch", &plan.dbranch, N * C}, {"dh", &plan.dh, N * F}, {"dg", &plan.dg, N * F},
             {"adapter_out", &plan.adapter_out, N * C}, {"dkv_k", &plan.dkv_k, N * Ckv},
             {"dkv_v", &plan.dkv_v, N * Ckv}, {"dgate", &plan.dgate, N * Fg}})
      layout.add(name, n, slot);
  }

  return widest;
}

// The widest of each adapter scratch a segment's blocks need (its gradients' buffers).
struct AdapterWidths {
  int prefix = 0;
};

// Segment s's prefix activations in block l, widening `widths`.
void lay_out_segment_block(BatchPlan& plan, const FamilyBatch& batch, std::size_t s, int l,
                           Layout& layout, AdapterWidths& widths) {
  using Plan = BatchPlan;
  const std::int64_t C = batch.segments[0].model->arch.width;
  const Segment& seg = batch.segments[s];
  const ModelWeights& m = *seg.model;
  Plan::SegmentActs& sa = plan.segments[s];
  const std::string q = "seg." + std::to_string(s) + ".blk." + std::to_string(l) + ".";
  // A cache holds the prefix rows itself (runtime/model/kv_cache.h).
  const int Pf = seg.cache ? 0 : m.prefix_tokens(l);
  widths.prefix = std::max(widths.prefix, Pf);
  layout.add(q + "prefix_k", Pf * C, &sa.prefix_k[l]);
  layout.add(q + "prefix_v", Pf * C, &sa.prefix_v[l]);
}

// Segment s's own buffers: its tokens and targets, prompt, prefix activations and their
// gradients' scratch, pooled rows, logits and losses (its adaptations' buffers:
// add_adaptation_buffers).
void lay_out_segment(BatchPlan& plan, const FamilyBatch& batch, std::size_t s, Layout& layout) {
  using Plan = BatchPlan;
  const spec::Architecture& a = batch.segments[0].model->arch;
  const std::int64_t C = a.width, V = a.vocab_size, L = a.layers;
  const Segment& seg = batch.segments[s];
  const ModelWeights& m = *seg.model;
  Plan::SegmentActs& sa = plan.segments[s];
  const std::string p = "seg." + std::to_string(s) + ".";
  const std::int64_t rows = sa.rows;
  layout.add_ints(p + "tokens", static_cast<std::int64_t>(sa.B) * sa.T, &sa.tokens_buffer);
  layout.add_ints(p + "lengths", sa.B, &sa.lengths_buffer);
  layout.add_ints(p + "attn_lengths", sa.B, &sa.attn_lengths_buffer);
  const bool head = m.objective == spec::Objective::kClassification;
  const bool per_token = head && m.classifier.per_token();
  const spec::HeadTask task = head ? m.classifier.task : spec::HeadTask::kClassification;
  const bool by_values =
      head && (task == spec::HeadTask::kRegression || task == spec::HeadTask::kMultiLabel);
  if (!by_values)
    layout.add_ints(p + "targets", head && !per_token ? sa.B : rows, &sa.targets_buffer);
  if (by_values && !plan.inference)
    layout.add(p + "values", static_cast<std::int64_t>(sa.B) * m.classifier.linear.out,
               &sa.values_buffer);
  layout.add(p + "prompt", sa.P * C, &sa.prompt);
  layout.add(p + "dprompt", sa.P * C, &sa.dprompt);
  sa.prefix_k.assign(L, nullptr);
  sa.prefix_v.assign(L, nullptr);
  AdapterWidths widths;
  for (int l = 0; l < L; ++l) lay_out_segment_block(plan, batch, s, l, layout, widths);
  layout.add(p + "dprefix_k", widths.prefix * C, &sa.dprefix_k);
  layout.add(p + "dprefix_v", widths.prefix * C, &sa.dprefix_v);
  const bool pooled = head && !per_token;
  const bool last_only = !head && seg.last_position_logits;
  const std::int64_t logit_rows = pooled || last_only ? sa.B : rows;
  if (last_only) layout.add(p + "last_hidden", sa.B * C, &sa.last_hidden);
  const std::int64_t width = head ? m.classifier.linear.out : V;
  if (pooled) {
    layout.add(p + "pooled", sa.B * C, &sa.pooled);
    layout.add(p + "dpooled", sa.B * C, &sa.dpooled);
    if (m.pooler.weight) {
      layout.add(p + "pooler_pre", sa.B * C, &sa.pooler_pre);
      layout.add(p + "pooler_out", sa.B * C, &sa.pooler_out);
      layout.add(p + "dpooler", sa.B * C, &sa.dpooler);
    }
  }
  layout.add(p + "logits", logit_rows * width, &sa.logits);
  // Inference takes no loss: an LM head's logits (rows × V) are the largest buffers of a
  // scoring batch, so their gradient, probabilities and losses are not laid out.
  if (plan.inference) return;
  layout.add(p + "dlogits", logit_rows * width, &sa.dlogits);
  layout.add(p + "probs", logit_rows * width, &sa.probs);
  layout.add(p + "losses", logit_rows, &sa.losses);
}

}  // namespace

Status plan_batch(BatchPlan& plan, const FamilyBatch& batch, Backend& backend) {
  const spec::Architecture& a = batch.segments[0].model->arch;
  const std::int64_t C = a.width;
  const std::int64_t has_mean = a.norm_kind == spec::NormKind::kLayerNorm ? 1 : 0;
  plan.dropout = batch.training ? a.dropout : 0.0f;
  place_segments(plan, batch);
  plan.inference = is_inference(batch);
  plan.stages = build_stages(batch, plan.final_unit);
  plan.stage_rows.clear();
  for (const Stage& stage : plan.stages) plan.stage_rows.push_back(stage_rows(stage));
  const std::int64_t N = plan.N;
  const std::int64_t N0 = plan.stage_rows.front(), NL = plan.stage_rows.back();
  Layout layout;
  layout.add("emb", N0 * C, &plan.emb);
  if (plan.dropout > 0) layout.add("emb_mask", N * C, &plan.emb_mask);
  if (a.norm == spec::NormPlacement::kPost) {
    layout.add("embn", N0 * C, &plan.embn);
    layout.add("embn_mean", has_mean * N0, &plan.embn_mean);
    layout.add("embn_rstd", N0, &plan.embn_rstd);
  } else {
    layout.add("lnf", NL * C, &plan.lnf);
    layout.add("lnf_mean", has_mean * NL, &plan.lnf_mean);
    layout.add("lnf_rstd", NL, &plan.lnf_rstd);
  }
  const std::int64_t widest = lay_out_blocks(plan, batch, layout);
  add_adaptation_buffers(plan, batch, widest, layout);
  for (std::size_t s = 0; s < batch.segments.size(); ++s) lay_out_segment(plan, batch, s, layout);
  SCION_RETURN_IF_ERROR(layout.finish(plan.arena, backend));
  if (plan.inference || plan.recompute)  // one set of block buffers, shared by every block
    for (int l = 1; l < a.layers; ++l) plan.blocks[l] = plan.blocks[0];
  return Status::ok();
}

}  // namespace scion::runtime::detail
