#include "runtime/transformer.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "base/seeded_rng.h"
#include "runtime/cpu/cross_entropy.h"
#include "runtime/cpu/dropout.h"
#include "runtime/cpu/layernorm.h"

namespace scion::runtime {
namespace {

bool same_trunk(const ModelWeights& a, const ModelWeights& b) {
  if (a.tok_emb != b.tok_emb || a.pos_emb != b.pos_emb || a.type_emb != b.type_emb ||
      a.lm_head != b.lm_head ||
      a.ln_f.weight != b.ln_f.weight || a.emb_ln.weight != b.emb_ln.weight ||
      a.blocks.size() != b.blocks.size())
    return false;
  for (std::size_t l = 0; l < a.blocks.size(); ++l) {
    const BlockWeights& x = a.blocks[l];
    const BlockWeights& y = b.blocks[l];
    if (x.ln1.weight != y.ln1.weight || x.ln1.bias != y.ln1.bias ||
        x.ln2.weight != y.ln2.weight || x.ln2.bias != y.ln2.bias)
      return false;
    for (int i = 0; i < kLinearCount; ++i)
      if (x.linear[i].weight != y.linear[i].weight || x.linear[i].bias != y.linear[i].bias)
        return false;
  }
  return true;
}

// Dropout stream ids of the trunk's sites, distinct per block.
std::uint64_t site_stream(int block, int site) {
  return base::splitmix64(static_cast<std::uint64_t>(block + 1) * 8 +
                          static_cast<std::uint64_t>(site));
}
constexpr int kEmbeddingSite = 0, kAttentionSite = 1, kFfnSite = 2;

}  // namespace

// Everything laid out for one batch shape: row ranges, and pointers into the arena.
namespace detail {

// One node of the trie of layer applications: rows computed once for every segment that
// shares it. Without sharing, each stage has one unit per segment, over its own rows.
struct Unit {
  int segment = 0;                  // the segment whose adapters and buffers it applies
  std::int64_t row0 = 0, rows = 0;  // its rows in the stage's activations
  std::int64_t probs0 = 0;          // offset into the block's attention probabilities
  int parent = 0;                   // the unit of the previous stage that feeds it
};
using Stage = std::vector<Unit>;  // stages[0]: embeddings; stages[l + 1]: block l

struct BatchPlan {
  struct LoraActs {
    float* hidden = nullptr;   // (rows, r)
    float* dropped = nullptr;  // (rows, in) LoRA input after dropout, when dropout applies
    float* mask = nullptr;     // (rows, in)
  };
  struct BottleneckActs {
    float* pre = nullptr;  // (rows, H) before GELU
    float* act = nullptr;  // (rows, H)
  };
  struct SegmentActs {
    std::int64_t row0 = 0, rows = 0;
    std::int64_t counted = 0;  // the last forward's loss denominator (Segment::loss_denominator)
    int B = 0, T = 0, P = 0, S = 0;  // S = P + T
    std::vector<std::int32_t> attn_lengths;  // (B) prompt + real tokens; empty: all S
    std::vector<std::int32_t> lm_targets;    // (B, S) for LM objectives
    float* prompt = nullptr;                 // (P, C) concatenated prompts
    float* dprompt = nullptr;
    std::vector<float*> prefix_k, prefix_v;  // per block (Pf, C), null when Pf = 0
    float* dprefix_k = nullptr;              // (max Pf, C) scratch
    float* dprefix_v = nullptr;
    std::vector<std::array<std::vector<LoraActs>, kLinearCount>> lora;  // [block][linear][j]
    std::vector<std::array<std::vector<BottleneckActs>, 2>> bottleneck;  // [block][site][j]
    float* dlora_hidden = nullptr;  // (rows, max r)
    float* dlora_in = nullptr;      // (rows, max in), when some LoRA has dropout
    float* dbneck_pre = nullptr;    // (rows, max H)
    float* dbneck_act = nullptr;
    float* pooled = nullptr;   // (B, C)
    float* dpooled = nullptr;  // (B, C)
    // BERT's pooler between pooling and the head: tanh(pooled · Wᵀ + b).
    float* pooler_pre = nullptr;  // (B, C)
    float* pooler_out = nullptr;  // (B, C)
    float* dpooler = nullptr;     // (B, C)
    float* logits = nullptr;   // (B, K) or (rows, V)
    float* dlogits = nullptr;
    float* probs = nullptr;
    float* losses = nullptr;
  };
  struct BlockActs {
    float *ln1, *ln1_mean, *ln1_rstd, *q, *k, *v, *att, *probs, *o, *o_mask, *res1;
    float *ln2, *ln2_mean, *ln2_rstd, *h, *g, *f, *f_mask, *res2;
  };

  std::string signature;
  Arena arena;
  std::int64_t N = 0;  // rows of all segments
  float dropout = 0.0f;
  // Inference (no targets): one set of block buffers serves every block, and each
  // block's input is gathered into `in` from the previous stage's units.
  bool inference = false;
  std::vector<Stage> stages;
  std::vector<std::int64_t> stage_rows;  // rows computed at each stage (N without sharing)
  std::vector<int> final_unit;           // per segment: its unit in stages.back()
  float* in = nullptr;
  std::vector<SegmentActs> segments;
  std::vector<BlockActs> blocks;
  float *emb = nullptr, *emb_mask = nullptr, *embn = nullptr, *embn_mean = nullptr,
        *embn_rstd = nullptr, *lnf = nullptr, *lnf_mean = nullptr, *lnf_rstd = nullptr;
  float *dx = nullptr, *dtmp = nullptr, *dq = nullptr, *dk = nullptr, *dv = nullptr,
        *datt = nullptr, *dbranch = nullptr, *dh = nullptr, *dg = nullptr,
        *adapter_out = nullptr;
};
}  // namespace detail

namespace {

bool same_inputs(const Segment& a, const Segment& b) {
  if (a.batch != b.batch || a.length != b.length) return false;
  const ModelWeights& x = *a.model;
  const ModelWeights& y = *b.model;
  if (x.prompts.size() != y.prompts.size()) return false;
  for (std::size_t i = 0; i < x.prompts.size(); ++i)
    if (x.prompts[i].embeddings != y.prompts[i].embeddings || x.prompts[i].tokens != y.prompts[i].tokens)
      return false;
  const auto n = static_cast<std::size_t>(a.batch) * static_cast<std::size_t>(a.length);
  if (a.tokens != b.tokens && std::memcmp(a.tokens, b.tokens, n * sizeof(std::int32_t)) != 0)
    return false;
  if (!a.lengths || !b.lengths) return a.lengths == b.lengths;
  return a.lengths == b.lengths ||
         std::memcmp(a.lengths, b.lengths, static_cast<std::size_t>(a.batch) * sizeof(std::int32_t)) == 0;
}

bool same_linear(const LinearWeights& a, const LinearWeights& b) {
  return a.weight == b.weight && a.bias == b.bias;
}

// Whether two models apply the same parameters in block l (the trunk's are shared).
bool same_block(const ModelWeights& x, const ModelWeights& y, int l) {
  const BlockWeights& a = x.blocks[l];
  const BlockWeights& b = y.blocks[l];
  if (a.prefixes.size() != b.prefixes.size() || a.adapter_attn.size() != b.adapter_attn.size() ||
      a.adapter_ffn.size() != b.adapter_ffn.size())
    return false;
  for (std::size_t j = 0; j < a.prefixes.size(); ++j)
    if (a.prefixes[j].keys != b.prefixes[j].keys || a.prefixes[j].values != b.prefixes[j].values)
      return false;
  for (int i = 0; i < kLinearCount; ++i) {
    if (a.lora[i].size() != b.lora[i].size()) return false;
    for (std::size_t j = 0; j < a.lora[i].size(); ++j)
      if (a.lora[i][j].a != b.lora[i][j].a || a.lora[i][j].b != b.lora[i][j].b ||
          a.lora[i][j].scale != b.lora[i][j].scale)
        return false;
  }
  for (int site = 0; site < 2; ++site) {
    const auto& p = site == 0 ? a.adapter_attn : a.adapter_ffn;
    const auto& q = site == 0 ? b.adapter_attn : b.adapter_ffn;
    for (std::size_t j = 0; j < p.size(); ++j)
      if (!same_linear(p[j].down, q[j].down) || !same_linear(p[j].up, q[j].up)) return false;
  }
  return true;
}

// Attention probabilities one segment's rows take in `block`: (B, heads, S, Pf + S).
std::int64_t segment_probs(const Segment& seg, int block) {
  const std::int64_t S = seg.model->prompt_tokens() + seg.length;
  return seg.batch * seg.model->arch.heads * S * (seg.model->prefix_tokens(block) + S);
}

// The trie of layer applications: stage by stage, each segment joins the first unit whose
// input and parameters equal its own, or starts a new one. Without share_identical, every
// segment is its own unit at every stage. `final_unit` receives each segment's last unit.
std::vector<detail::Stage> build_stages(const FamilyBatch& batch, std::vector<int>& final_unit) {
  const int L = batch.segments[0].model->arch.layers;
  const std::size_t n = batch.segments.size();
  std::vector<detail::Stage> stages(static_cast<std::size_t>(L) + 1);
  std::vector<int> unit_of(n), previous(n);
  for (int k = 0; k <= L; ++k) {
    detail::Stage& stage = stages[k];
    std::int64_t row0 = 0, probs0 = 0;
    for (std::size_t s = 0; s < n; ++s) {
      const Segment& seg = batch.segments[s];
      int found = -1;
      if (batch.share_identical)
        for (std::size_t u = 0; u < stage.size() && found < 0; ++u) {
          const Segment& rep = batch.segments[stage[u].segment];
          const bool same = k == 0 ? same_inputs(rep, seg)
                                   : stage[u].parent == previous[s] &&
                                         same_block(*rep.model, *seg.model, k - 1);
          if (same) found = static_cast<int>(u);
        }
      if (found < 0) {
        const std::int64_t rows =
            static_cast<std::int64_t>(seg.batch) * (seg.model->prompt_tokens() + seg.length);
        stage.push_back({.segment = static_cast<int>(s), .row0 = row0, .rows = rows,
                         .probs0 = probs0, .parent = k == 0 ? 0 : previous[s]});
        row0 += rows;
        if (k > 0) probs0 += segment_probs(seg, k - 1);
        found = static_cast<int>(stage.size()) - 1;
      }
      unit_of[s] = found;
    }
    previous = unit_of;
  }
  final_unit = unit_of;
  return stages;
}

std::int64_t stage_rows(const detail::Stage& stage) {
  std::int64_t rows = 0;
  for (const detail::Unit& u : stage) rows += u.rows;
  return rows;
}

std::int64_t stage_probs(const detail::Stage& stage, const FamilyBatch& batch, int block) {
  std::int64_t probs = 0;
  for (const detail::Unit& u : stage) probs += segment_probs(batch.segments[u.segment], block);
  return probs;
}

bool is_inference(const FamilyBatch& batch) {
  if (batch.training) return false;
  for (const Segment& seg : batch.segments)
    if (seg.targets) return false;
  return true;
}

// Everything the arena layout depends on: shapes, and each model's adapter structure
// (not its address, which a caller may reuse for a different model).
std::string batch_signature(const FamilyBatch& batch) {
  std::string s = batch.training ? "T" : is_inference(batch) ? "I" : "E";
  auto add = [&s](std::int64_t v) {
    s += std::to_string(v);
    s += ',';
  };
  if (batch.share_identical) {  // which units the segments share
    std::vector<int> final_unit;
    for (const detail::Stage& stage : build_stages(batch, final_unit)) {
      s += '#';
      for (const detail::Unit& u : stage) {
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
    add(m.prompt_tokens());
    for (const BlockWeights& b : m.blocks) {
      s += '/';
      for (const PrefixWeights& p : b.prefixes) add(p.tokens);
      for (const auto& loras : b.lora) {
        s += 'l';
        for (const LoraWeights& l : loras) add(l.rank * 2 + (l.dropout > 0));
      }
      for (const BottleneckWeights& w : b.adapter_attn) add(w.down.out);
      s += 'f';
      for (const BottleneckWeights& w : b.adapter_ffn) add(w.down.out);
    }
  }
  return s;
}

Status validate(const FamilyBatch& batch) {
  if (batch.segments.empty())
    return invalid_argument("a family batch needs at least one segment");
  if (batch.share_identical && !is_inference(batch))
    return invalid_argument("sharing identical layer applications is for inference only "
                            "(no training, no targets)");
  const ModelWeights& first = *batch.segments[0].model;
  const spec::Architecture& a = first.arch;
  for (const Segment& seg : batch.segments) {
    const ModelWeights& m = *seg.model;
    if (!same_trunk(first, m))
      return invalid_argument("models '" + first.name + "' and '" + m.name +
                              "' do not share one trunk storage; batch them separately");
    if (batch.segments.size() > 1 && m.trunk_trainable)
      return invalid_argument("model '" + m.name +
                              "' trains trunk parameters, so it must be batched alone");
    if (seg.batch <= 0 || seg.length <= 0)
      return invalid_argument("segment of model '" + m.name + "' is empty");
    if (seg.length + m.prompt_tokens() > a.max_length)
      return invalid_argument("model '" + m.name + "': " + std::to_string(seg.length) +
                              " tokens + " + std::to_string(m.prompt_tokens()) +
                              " prompt tokens exceed max_length " + std::to_string(a.max_length));
    const std::int64_t n = static_cast<std::int64_t>(seg.batch) * seg.length;
    for (std::int64_t i = 0; i < n; ++i)
      if (seg.tokens[i] < 0 || seg.tokens[i] >= a.vocab_size)
        return invalid_argument("model '" + m.name + "': token id " +
                                std::to_string(seg.tokens[i]) + " outside vocabulary of " +
                                std::to_string(a.vocab_size));
    if (seg.lengths)
      for (int b = 0; b < seg.batch; ++b)
        if (seg.lengths[b] < 1 || seg.lengths[b] > seg.length)
          return invalid_argument("model '" + m.name + "': sequence length " +
                                  std::to_string(seg.lengths[b]) + " outside 1.." +
                                  std::to_string(seg.length));
    if (!seg.targets) continue;
    const bool classify = m.objective == spec::Objective::kClassification;
    const int classes = classify ? m.classifier.linear.out : a.vocab_size;
    const std::int64_t targets = classify ? seg.batch : n;
    for (std::int64_t i = 0; i < targets; ++i) {
      const std::int32_t t = seg.targets[i];
      if (t != cpu::kIgnoreIndex && (t < 0 || t >= classes))
        return invalid_argument("model '" + m.name + "': target " + std::to_string(t) +
                                " outside 0.." + std::to_string(classes - 1));
    }
  }
  return Status::ok();
}

// Builds the arena table for the batch and hands out pointers.
class Layout {
 public:
  void add(const std::string& name, std::int64_t numel, float** slot) {
    if (numel <= 0) return;
    table_.push_back({name, {numel}, DType::kF32});
    slots_.push_back(slot);
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

// Lays out every activation, saved value and gradient scratch buffer of the batch in
// one arena: trunk buffers span all N rows; adapter and head buffers are per segment.
Status plan_batch(detail::BatchPlan& plan, const FamilyBatch& batch, Backend& backend) {
  using Plan = detail::BatchPlan;
  const ModelWeights& trunk = *batch.segments[0].model;
  const spec::Architecture& a = trunk.arch;
  const std::int64_t C = a.width, F = a.ffn_width, V = a.vocab_size, L = a.layers;
  plan.dropout = batch.training ? a.dropout : 0.0f;
  plan.segments.assign(batch.segments.size(), Plan::SegmentActs{});
  plan.N = 0;
  for (std::size_t s = 0; s < batch.segments.size(); ++s) {
    const Segment& seg = batch.segments[s];
    Plan::SegmentActs& sa = plan.segments[s];
    sa.B = seg.batch;
    sa.T = seg.length;
    sa.P = seg.model->prompt_tokens();
    sa.S = sa.P + sa.T;
    sa.row0 = plan.N;
    sa.rows = static_cast<std::int64_t>(sa.B) * sa.S;
    plan.N += sa.rows;
  }
  plan.inference = is_inference(batch);
  plan.stages = build_stages(batch, plan.final_unit);
  plan.stage_rows.clear();
  for (const detail::Stage& stage : plan.stages) plan.stage_rows.push_back(stage_rows(stage));
  const std::int64_t N = plan.N;
  const std::int64_t N0 = plan.stage_rows.front(), NL = plan.stage_rows.back();
  Layout layout;
  layout.add("emb", N0 * C, &plan.emb);
  if (plan.dropout > 0) layout.add("emb_mask", N * C, &plan.emb_mask);
  if (a.norm == spec::NormPlacement::kPost) {
    layout.add("embn", N0 * C, &plan.embn);
    layout.add("embn_mean", N0, &plan.embn_mean);
    layout.add("embn_rstd", N0, &plan.embn_rstd);
  } else {
    layout.add("lnf", NL * C, &plan.lnf);
    layout.add("lnf_mean", NL, &plan.lnf_mean);
    layout.add("lnf_rstd", NL, &plan.lnf_rstd);
  }
  // Training keeps every block's activations for backward; inference reuses one set,
  // sized for the widest stage.
  plan.blocks.assign(L, Plan::BlockActs{});
  const int planned_blocks = plan.inference ? 1 : L;
  std::int64_t widest = 0;
  for (int l = 0; l < L; ++l) widest = std::max(widest, plan.stage_rows[l + 1]);
  for (int l = 0; l < planned_blocks; ++l) {
    Plan::BlockActs& b = plan.blocks[l];
    const std::string p = "blk." + std::to_string(l) + ".";
    const std::int64_t n_rows = plan.inference ? widest : N;
    std::int64_t probs = 0;
    for (int k = 0; k < L; ++k)
      if (plan.inference || k == l)
        probs = std::max(probs, stage_probs(plan.stages[k + 1], batch, k));
    for (auto [name, slot, n] : std::initializer_list<std::tuple<const char*, float**, std::int64_t>>{
             {"ln1", &b.ln1, n_rows * C}, {"ln1_mean", &b.ln1_mean, n_rows},
             {"ln1_rstd", &b.ln1_rstd, n_rows}, {"q", &b.q, n_rows * C}, {"k", &b.k, n_rows * C},
             {"v", &b.v, n_rows * C}, {"att", &b.att, n_rows * C}, {"probs", &b.probs, probs},
             {"o", &b.o, n_rows * C}, {"res1", &b.res1, n_rows * C}, {"ln2", &b.ln2, n_rows * C},
             {"ln2_mean", &b.ln2_mean, n_rows}, {"ln2_rstd", &b.ln2_rstd, n_rows},
             {"h", &b.h, n_rows * F}, {"g", &b.g, n_rows * F}, {"f", &b.f, n_rows * C},
             {"res2", &b.res2, n_rows * C}})
      layout.add(p + name, n, slot);
    if (plan.dropout > 0) {
      layout.add(p + "o_mask", N * C, &b.o_mask);
      layout.add(p + "f_mask", N * C, &b.f_mask);
    }
  }
  if (plan.inference) {
    layout.add("in", widest * C, &plan.in);
    layout.add("adapter_out", widest * C, &plan.adapter_out);
  } else {
    for (auto [name, slot, n] : std::initializer_list<std::tuple<const char*, float**, std::int64_t>>{
             {"dx", &plan.dx, N * C}, {"dtmp", &plan.dtmp, N * C}, {"dq", &plan.dq, N * C},
             {"dk", &plan.dk, N * C}, {"dv", &plan.dv, N * C}, {"datt", &plan.datt, N * C},
             {"dbranch", &plan.dbranch, N * C}, {"dh", &plan.dh, N * F}, {"dg", &plan.dg, N * F},
             {"adapter_out", &plan.adapter_out, N * C}})
      layout.add(name, n, slot);
  }

  for (std::size_t s = 0; s < batch.segments.size(); ++s) {
    const Segment& seg = batch.segments[s];
    const ModelWeights& m = *seg.model;
    Plan::SegmentActs& sa = plan.segments[s];
    const std::string p = "seg." + std::to_string(s) + ".";
    const std::int64_t rows = sa.rows;
    layout.add(p + "prompt", sa.P * C, &sa.prompt);
    layout.add(p + "dprompt", sa.P * C, &sa.dprompt);
    sa.prefix_k.assign(L, nullptr);
    sa.prefix_v.assign(L, nullptr);
    sa.lora.resize(L);
    sa.bottleneck.resize(L);
    int max_prefix = 0, max_rank = 0, max_hidden = 0;
    std::int64_t max_dropped_in = 0;
    for (int l = 0; l < L; ++l) {
      const BlockWeights& bw = m.blocks[l];
      const std::string q = p + "blk." + std::to_string(l) + ".";
      const int Pf = m.prefix_tokens(l);
      max_prefix = std::max(max_prefix, Pf);
      layout.add(q + "prefix_k", Pf * C, &sa.prefix_k[l]);
      layout.add(q + "prefix_v", Pf * C, &sa.prefix_v[l]);
      for (int i = 0; i < kLinearCount; ++i) {
        sa.lora[l][i].resize(bw.lora[i].size());
        for (std::size_t j = 0; j < bw.lora[i].size(); ++j) {
          const LoraWeights& lw = bw.lora[i][j];
          const std::string r = q + kLinearStems[i] + "." + std::to_string(j) + ".";
          Plan::LoraActs& la = sa.lora[l][i][j];
          layout.add(r + "hidden", rows * lw.rank, &la.hidden);
          max_rank = std::max(max_rank, lw.rank);
          if (batch.training && lw.dropout > 0) {
            const int in = bw.linear[i].in;
            layout.add(r + "dropped", rows * in, &la.dropped);
            layout.add(r + "mask", rows * in, &la.mask);
            max_dropped_in = std::max<std::int64_t>(max_dropped_in, in);
          }
        }
      }
      for (int site = 0; site < 2; ++site) {
        const auto& adapters = site == 0 ? bw.adapter_attn : bw.adapter_ffn;
        sa.bottleneck[l][site].resize(adapters.size());
        for (std::size_t j = 0; j < adapters.size(); ++j) {
          const int H = adapters[j].down.out;
          const std::string r = q + (site == 0 ? "adapter_attn." : "adapter_ffn.") + std::to_string(j) + ".";
          layout.add(r + "pre", rows * H, &sa.bottleneck[l][site][j].pre);
          layout.add(r + "act", rows * H, &sa.bottleneck[l][site][j].act);
          max_hidden = std::max(max_hidden, H);
        }
      }
    }
    layout.add(p + "dprefix_k", max_prefix * C, &sa.dprefix_k);
    layout.add(p + "dprefix_v", max_prefix * C, &sa.dprefix_v);
    layout.add(p + "dlora_hidden", rows * max_rank, &sa.dlora_hidden);
    layout.add(p + "dlora_in", rows * max_dropped_in, &sa.dlora_in);
    layout.add(p + "dbneck_pre", rows * max_hidden, &sa.dbneck_pre);
    layout.add(p + "dbneck_act", rows * max_hidden, &sa.dbneck_act);
    const bool classify = m.objective == spec::Objective::kClassification;
    const std::int64_t logit_rows = classify ? sa.B : rows;
    const std::int64_t width = classify ? m.classifier.linear.out : V;
    if (classify) {
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
    if (plan.inference) continue;
    layout.add(p + "dlogits", logit_rows * width, &sa.dlogits);
    layout.add(p + "probs", logit_rows * width, &sa.probs);
    layout.add(p + "losses", logit_rows, &sa.losses);
  }
  SCION_RETURN_IF_ERROR(layout.finish(plan.arena, backend));
  if (plan.inference)
    for (int l = 1; l < L; ++l) plan.blocks[l] = plan.blocks[0];
  return Status::ok();
}

}  // namespace

SegmentedTransformer::SegmentedTransformer(Backend& backend)
    : backend_(backend), plan_(std::make_unique<detail::BatchPlan>()) {}

SegmentedTransformer::~SegmentedTransformer() = default;

namespace {

// The forward/backward passes, over one planned batch.
class Pass {
 public:
  using Plan = detail::BatchPlan;
  Pass(Backend& backend, Plan& plan, const FamilyBatch& batch)
      : be_(backend), plan_(plan), batch_(batch), trunk_(*batch.segments[0].model),
        a_(trunk_.arch), C_(a_.width), F_(a_.ffn_width), N_(plan.N),
        pre_norm_(a_.norm == spec::NormPlacement::kPre) {}

  void forward(std::vector<SegmentResult>& results);
  void backward();

 private:
  const Segment& seg(std::size_t s) const { return batch_.segments[s]; }
  std::size_t segment_count() const { return batch_.segments.size(); }
  // The units computed at block l, and their rows (all of them: N_ in training).
  const detail::Stage& units(int l) const { return plan_.stages[l + 1]; }
  std::int64_t rows_at(int l) const { return plan_.stage_rows[l + 1]; }

  // The model's layer norm (its epsilon) and FFN activation (architecture.h's choices).
  void layer_norm(float* out, float* mean, float* rstd, const float* inp, const NormWeights& w,
                  std::int64_t rows);
  void activation_forward(float* out, const float* inp, std::int64_t n);
  void activation_backward(float* dinp, const float* inp, const float* dout, std::int64_t n);

  void prepare_segment_inputs();
  void embeddings_forward();
  const float* block_forward(int l, const float* x);
  void linear_forward(int l, int i, float* out, const float* inp);
  void bottleneck_forward(int l, int site, const float* y, float* res);
  void dropout_forward(float* x, float* mask, int block, int site, std::int64_t width);
  void heads_forward(const float* y, std::vector<SegmentResult>& results);

  void heads_backward(const float* y, float* dy);
  void block_backward(int l, const float* x, bool input_grad);
  void linear_backward(int l, int i, float* dinp, const float* dout, const float* inp,
                       GradMode mode);
  void bottleneck_backward(int l, int site, const float* y, const float* dres, float* dy);
  void dropout_backward(float* dx, const float* mask, std::int64_t width);
  void attention_backward(int l);
  void embeddings_backward();

  Backend& be_;
  Plan& plan_;
  const FamilyBatch& batch_;
  const ModelWeights& trunk_;
  const spec::Architecture& a_;
  const int C_, F_;
  const std::int64_t N_;
  const bool pre_norm_;
};

void Pass::layer_norm(float* out, float* mean, float* rstd, const float* inp,
                      const NormWeights& w, std::int64_t rows) {
  if (a_.norm_eps == cpu::kLayerNormEps)
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

void Pass::activation_backward(float* dinp, const float* inp, const float* dout,
                               std::int64_t n) {
  if (a_.activation == spec::Activation::kGeluErf)
    be_.gelu_erf_backward(dinp, inp, dout, n);
  else
    be_.gelu_backward(dinp, inp, dout, n);
}

void Pass::prepare_segment_inputs() {
  for (std::size_t s = 0; s < segment_count(); ++s) {
    const ModelWeights& m = *seg(s).model;
    Plan::SegmentActs& sa = plan_.segments[s];
    std::int64_t offset = 0;
    for (const PromptWeights& p : m.prompts) {
      be_.copy(sa.prompt + offset * C_, p.embeddings, static_cast<std::int64_t>(p.tokens) * C_);
      offset += p.tokens;
    }
    for (int l = 0; l < a_.layers; ++l) {
      std::int64_t row = 0;
      for (const PrefixWeights& p : m.blocks[l].prefixes) {
        be_.copy(sa.prefix_k[l] + row * C_, p.keys, static_cast<std::int64_t>(p.tokens) * C_);
        be_.copy(sa.prefix_v[l] + row * C_, p.values, static_cast<std::int64_t>(p.tokens) * C_);
        row += p.tokens;
      }
    }
    sa.attn_lengths.clear();
    if (seg(s).lengths)
      for (int b = 0; b < sa.B; ++b) sa.attn_lengths.push_back(sa.P + seg(s).lengths[b]);
    sa.lm_targets.clear();
    if (m.objective != spec::Objective::kClassification && seg(s).targets) {
      sa.lm_targets.assign(static_cast<std::size_t>(sa.rows), cpu::kIgnoreIndex);
      for (int b = 0; b < sa.B; ++b)
        for (int t = 0; t < sa.T; ++t)
          sa.lm_targets[static_cast<std::size_t>(b) * sa.S + sa.P + t] =
              seg(s).targets[static_cast<std::size_t>(b) * sa.T + t];
    }
  }
}

void Pass::dropout_forward(float* x, float* mask, int block, int site, std::int64_t width) {
  if (plan_.dropout <= 0) return;
  for (std::size_t s = 0; s < segment_count(); ++s) {
    const Plan::SegmentActs& sa = plan_.segments[s];
    be_.dropout_forward(x + sa.row0 * width, mask + sa.row0 * width, x + sa.row0 * width,
                        sa.rows * width, plan_.dropout, seg(s).dropout_seed,
                        site_stream(block, site));
  }
}

void Pass::embeddings_forward() {
  for (const detail::Unit& u : plan_.stages.front()) {
    const Plan::SegmentActs& sa = plan_.segments[u.segment];
    be_.embedding_forward(plan_.emb + u.row0 * C_, seg(u.segment).tokens, trunk_.tok_emb,
                          trunk_.pos_emb, sa.P ? sa.prompt : nullptr, sa.B, sa.T, sa.P, C_);
  }
  // BERT's token types: every token is type 0 (single texts), so row 0 goes everywhere.
  if (trunk_.type_emb)
    for (std::int64_t row = 0; row < plan_.stage_rows.front(); ++row)
      be_.add_inplace(plan_.emb + row * C_, trunk_.type_emb, 1.0f, C_);
  dropout_forward(plan_.emb, plan_.emb_mask, -1, kEmbeddingSite, C_);
  if (!pre_norm_)
    layer_norm(plan_.embn, plan_.embn_mean, plan_.embn_rstd, plan_.emb, trunk_.emb_ln,
               plan_.stage_rows.front());
}

// The frozen product once over all rows, then each segment's LoRA on its own rows.
void Pass::linear_forward(int l, int i, float* out, const float* inp) {
  const LinearWeights& w = trunk_.blocks[l].linear[i];
  be_.matmul_forward(out, inp, w.weight, w.bias, rows_at(l), w.in, w.out);
  for (const detail::Unit& u : units(l)) {
    const Plan::SegmentActs& sa = plan_.segments[u.segment];
    const auto& adapters = seg(u.segment).model->blocks[l].lora[i];
    for (std::size_t j = 0; j < adapters.size(); ++j) {
      const LoraWeights& lw = adapters[j];
      const Plan::LoraActs& la = sa.lora[l][i][j];
      const float* x = inp + u.row0 * w.in;
      if (la.dropped) {
        be_.dropout_forward(la.dropped, la.mask, x, u.rows * w.in, lw.dropout,
                            seg(u.segment).dropout_seed, lw.stream + j);
        x = la.dropped;
      }
      be_.matmul_forward(la.hidden, x, lw.a, nullptr, u.rows, w.in, lw.rank);
      be_.matmul_forward_accumulate(out + u.row0 * w.out, la.hidden, lw.b, lw.scale, u.rows,
                                    lw.rank, w.out);
    }
  }
}

// res[rows of s] += up(gelu(down(y))) for each bottleneck adapter of segment s at `site`.
void Pass::bottleneck_forward(int l, int site, const float* y, float* res) {
  for (const detail::Unit& u : units(l)) {
    const Plan::SegmentActs& sa = plan_.segments[u.segment];
    const BlockWeights& bw = seg(u.segment).model->blocks[l];
    const auto& adapters = site == 0 ? bw.adapter_attn : bw.adapter_ffn;
    for (std::size_t j = 0; j < adapters.size(); ++j) {
      const BottleneckWeights& w = adapters[j];
      const Plan::BottleneckActs& ba = sa.bottleneck[l][site][j];
      const std::int64_t H = w.down.out;
      be_.matmul_forward(ba.pre, y + u.row0 * C_, w.down.weight, w.down.bias, u.rows, C_,
                         static_cast<int>(H));
      be_.gelu_forward(ba.act, ba.pre, u.rows * H);
      float* delta = plan_.adapter_out + u.row0 * C_;
      be_.matmul_forward(delta, ba.act, w.up.weight, w.up.bias, u.rows, static_cast<int>(H), C_);
      be_.add_inplace(res + u.row0 * C_, delta, 1.0f, u.rows * C_);
    }
  }
}

const float* Pass::block_forward(int l, const float* x) {
  Plan::BlockActs& b = plan_.blocks[l];
  const BlockWeights& w = trunk_.blocks[l];
  const std::int64_t N_ = rows_at(l);  // shadows the batch's rows: this block's units
  const float* attn_in = x;
  if (pre_norm_) {
    layer_norm(b.ln1, b.ln1_mean, b.ln1_rstd, x, w.ln1, N_);
    attn_in = b.ln1;
  }
  linear_forward(l, kAttnQ, b.q, attn_in);
  linear_forward(l, kAttnK, b.k, attn_in);
  linear_forward(l, kAttnV, b.v, attn_in);
  for (const detail::Unit& u : units(l)) {
    const Plan::SegmentActs& sa = plan_.segments[u.segment];
    const std::int64_t off = u.row0 * C_;
    const int Pf = seg(u.segment).model->prefix_tokens(l);
    be_.attention_forward(b.att + off, b.probs + u.probs0, b.q + off, b.k + off,
                          b.v + off, Pf ? sa.prefix_k[l] : nullptr, Pf ? sa.prefix_v[l] : nullptr,
                          sa.attn_lengths.empty() ? nullptr : sa.attn_lengths.data(), sa.B, sa.S,
                          Pf, C_, a_.heads, a_.kind == spec::ArchitectureKind::kDecoder);
  }
  linear_forward(l, kAttnO, b.o, b.att);
  dropout_forward(b.o, b.o_mask, l, kAttentionSite, C_);
  be_.residual_forward(b.res1, x, b.o, N_ * C_);
  bottleneck_forward(l, 0, b.o, b.res1);
  const float* ffn_in;
  if (pre_norm_) {
    layer_norm(b.ln2, b.ln2_mean, b.ln2_rstd, b.res1, w.ln2, N_);
    ffn_in = b.ln2;
  } else {
    layer_norm(b.ln1, b.ln1_mean, b.ln1_rstd, b.res1, w.ln1, N_);
    ffn_in = b.ln1;
  }
  linear_forward(l, kFfnIn, b.h, ffn_in);
  activation_forward(b.g, b.h, N_ * F_);
  linear_forward(l, kFfnOut, b.f, b.g);
  dropout_forward(b.f, b.f_mask, l, kFfnSite, C_);
  be_.residual_forward(b.res2, pre_norm_ ? b.res1 : b.ln1, b.f, N_ * C_);
  bottleneck_forward(l, 1, b.f, b.res2);
  if (pre_norm_) return b.res2;
  layer_norm(b.ln2, b.ln2_mean, b.ln2_rstd, b.res2, w.ln2, N_);
  return b.ln2;
}

void Pass::heads_forward(const float* y, std::vector<SegmentResult>& results) {
  results.assign(segment_count(), SegmentResult{});
  for (std::size_t s = 0; s < segment_count(); ++s) {
    const ModelWeights& m = *seg(s).model;
    Plan::SegmentActs& sa = plan_.segments[s];
    const float* ys = y + plan_.stages.back()[plan_.final_unit[s]].row0 * C_;
    SegmentResult& r = results[s];
    std::int64_t rows;
    int width;
    const std::int32_t* targets;
    if (m.objective == spec::Objective::kClassification) {
      const LinearWeights& head = m.classifier.linear;
      be_.pool_forward(sa.pooled, ys, seg(s).lengths, sa.B, sa.S, sa.P, C_, m.classifier.pooling);
      const float* features = sa.pooled;
      if (m.pooler.weight) {
        be_.matmul_forward(sa.pooler_pre, sa.pooled, m.pooler.weight, m.pooler.bias, sa.B, C_, C_);
        be_.tanh_forward(sa.pooler_out, sa.pooler_pre, static_cast<std::int64_t>(sa.B) * C_);
        features = sa.pooler_out;
      }
      be_.matmul_forward(sa.logits, features, head.weight, head.bias, sa.B, C_, head.out);
      rows = sa.B;
      width = head.out;
      targets = seg(s).targets;
      r.logits = Tensor{sa.logits, {sa.B, width}, DType::kF32, be_.device()};
    } else {
      be_.matmul_forward(sa.logits, ys, m.lm_head, nullptr, sa.rows, C_, a_.vocab_size);
      rows = sa.rows;
      width = a_.vocab_size;
      targets = sa.lm_targets.empty() ? nullptr : sa.lm_targets.data();
      r.logits = Tensor{sa.logits, {sa.B, sa.S, width}, DType::kF32, be_.device()};
    }
    if (!targets) continue;
    r.counted = be_.cross_entropy_forward(sa.losses, sa.probs, sa.logits, targets, rows, width);
    sa.counted = seg(s).loss_denominator > 0 ? seg(s).loss_denominator : r.counted;
    double sum = 0.0;  // fixed order: the loss must not depend on threads
    for (std::int64_t i = 0; i < rows; ++i) sum += sa.losses[i];
    r.loss = sa.counted ? static_cast<float>(sum / static_cast<double>(sa.counted)) : 0.0f;
  }
}

void Pass::forward(std::vector<SegmentResult>& results) {
  prepare_segment_inputs();
  embeddings_forward();
  const float* x = pre_norm_ ? plan_.emb : plan_.embn;
  for (int l = 0; l < a_.layers; ++l) {
    if (plan_.inference) {
      // Each unit starts from its parent's rows; the block buffers are then free to reuse.
      const detail::Stage& parents = plan_.stages[l];
      for (const detail::Unit& u : units(l))
        be_.copy(plan_.in + u.row0 * C_, x + parents[u.parent].row0 * C_, u.rows * C_);
      x = plan_.in;
    }
    x = block_forward(l, x);
  }
  if (pre_norm_) {
    layer_norm(plan_.lnf, plan_.lnf_mean, plan_.lnf_rstd, x, trunk_.ln_f, plan_.stage_rows.back());
    x = plan_.lnf;
  }
  heads_forward(x, results);
}

// ---- backward ------------------------------------------------------------------------

// dy (N, C) = gradient of Σ_s mean loss_s w.r.t. the final hidden states y.
void Pass::heads_backward(const float* y, float* dy) {
  for (std::size_t s = 0; s < segment_count(); ++s) {
    const ModelWeights& m = *seg(s).model;
    Plan::SegmentActs& sa = plan_.segments[s];
    const float* ys = y + sa.row0 * C_;
    float* dys = dy + sa.row0 * C_;
    if (m.objective == spec::Objective::kClassification) {
      const LinearWeights& head = m.classifier.linear;
      const float scale = sa.counted ? 1.0f / static_cast<float>(sa.counted) : 0.0f;
      be_.cross_entropy_backward(sa.dlogits, sa.probs, seg(s).targets, scale, sa.B, head.out);
      if (m.pooler.weight) {
        const std::int64_t n = static_cast<std::int64_t>(sa.B) * C_;
        be_.matmul_backward(sa.dpooler, head.dweight, head.dbias, sa.dlogits, sa.pooler_out,
                            head.weight, 1.0f, sa.B, C_, head.out, GradMode::kAssign);
        be_.tanh_backward(sa.dpooler, sa.pooler_out, sa.dpooler, n);
        be_.matmul_backward(sa.dpooled, m.pooler.dweight, m.pooler.dbias, sa.dpooler, sa.pooled,
                            m.pooler.weight, 1.0f, sa.B, C_, C_, GradMode::kAssign);
      } else {
        be_.matmul_backward(sa.dpooled, head.dweight, head.dbias, sa.dlogits, sa.pooled,
                            head.weight, 1.0f, sa.B, C_, head.out, GradMode::kAssign);
      }
      be_.pool_backward(dys, sa.dpooled, seg(s).lengths, sa.B, sa.S, sa.P, C_,
                        m.classifier.pooling);
    } else {
      const float scale = sa.counted ? 1.0f / static_cast<float>(sa.counted) : 0.0f;
      be_.cross_entropy_backward(sa.dlogits, sa.probs, sa.lm_targets.data(), scale, sa.rows,
                                 a_.vocab_size);
      be_.matmul_backward(dys, m.dlm_head, nullptr, sa.dlogits, ys, m.lm_head, 1.0f, sa.rows,
                          C_, a_.vocab_size, GradMode::kAssign);
    }
  }
}

// dinp (=/+= per mode) and the frozen product's weight gradients (only when the trunk
// trains), then each segment's LoRA: its A/B gradients and its share of dinp (+=). A null
// dinp: nothing below needs the input's gradient, so only weight gradients are computed.
void Pass::linear_backward(int l, int i, float* dinp, const float* dout, const float* inp,
                           GradMode mode) {
  const LinearWeights& w = trunk_.blocks[l].linear[i];
  be_.matmul_backward(dinp, w.dweight, w.dbias, dout, inp, w.weight, 1.0f, N_, w.in, w.out, mode);
  for (std::size_t s = 0; s < segment_count(); ++s) {
    const Plan::SegmentActs& sa = plan_.segments[s];
    const auto& adapters = seg(s).model->blocks[l].lora[i];
    for (std::size_t j = 0; j < adapters.size(); ++j) {
      const LoraWeights& lw = adapters[j];
      const Plan::LoraActs& la = sa.lora[l][i][j];
      be_.matmul_backward(sa.dlora_hidden, lw.db, nullptr, dout + sa.row0 * w.out, la.hidden,
                          lw.b, lw.scale, sa.rows, lw.rank, w.out, GradMode::kAssign);
      float* dx = dinp ? dinp + sa.row0 * w.in : nullptr;
      if (la.dropped) {
        be_.matmul_backward(dx ? sa.dlora_in : nullptr, lw.da, nullptr, sa.dlora_hidden, la.dropped,
                            lw.a, 1.0f, sa.rows, w.in, lw.rank, GradMode::kAssign);
        if (dx) {
          be_.dropout_backward(sa.dlora_in, sa.dlora_in, la.mask, sa.rows * w.in);
          be_.add_inplace(dx, sa.dlora_in, 1.0f, sa.rows * w.in);
        }
      } else {
        be_.matmul_backward(dx, lw.da, nullptr, sa.dlora_hidden, inp + sa.row0 * w.in, lw.a,
                            1.0f, sa.rows, w.in, lw.rank, GradMode::kAccumulate);
      }
    }
  }
}

// Given dres = d loss / d (residual that received the adapter output), adds the adapter
// path's gradient to dy (the adapter input's gradient) and accumulates its weights'.
void Pass::bottleneck_backward(int l, int site, const float* y, const float* dres, float* dy) {
  for (std::size_t s = 0; s < segment_count(); ++s) {
    Plan::SegmentActs& sa = plan_.segments[s];
    const BlockWeights& bw = seg(s).model->blocks[l];
    const auto& adapters = site == 0 ? bw.adapter_attn : bw.adapter_ffn;
    for (std::size_t j = 0; j < adapters.size(); ++j) {
      const BottleneckWeights& w = adapters[j];
      const Plan::BottleneckActs& ba = sa.bottleneck[l][site][j];
      const int H = w.down.out;
      be_.matmul_backward(sa.dbneck_act, w.up.dweight, w.up.dbias, dres + sa.row0 * C_, ba.act,
                          w.up.weight, 1.0f, sa.rows, H, C_, GradMode::kAssign);
      be_.gelu_backward(sa.dbneck_pre, ba.pre, sa.dbneck_act, sa.rows * H);
      be_.matmul_backward(dy + sa.row0 * C_, w.down.dweight, w.down.dbias, sa.dbneck_pre,
                          y + sa.row0 * C_, w.down.weight, 1.0f, sa.rows, C_, H,
                          GradMode::kAccumulate);
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
    be_.layernorm_backward(dtmp, w.ln2.dweight, w.ln2.dbias, dx, b.res2, w.ln2.weight,
                           b.ln2_mean, b.ln2_rstd, N_, C_, GradMode::kAssign);
    dres2 = dtmp;
  }
  be_.copy(dbranch, dres2, N_ * C_);
  bottleneck_backward(l, 1, b.f, dres2, dbranch);
  dropout_backward(dbranch, b.f_mask, C_);
  linear_backward(l, kFfnOut, plan_.dg, dbranch, b.g, GradMode::kAssign);
  activation_backward(plan_.dh, b.h, plan_.dg, N_ * F_);
  if (pre_norm_) {
    linear_backward(l, kFfnIn, dtmp, plan_.dh, b.ln2, GradMode::kAssign);
    be_.layernorm_backward(dx, w.ln2.dweight, w.ln2.dbias, dtmp, b.res1, w.ln2.weight,
                           b.ln2_mean, b.ln2_rstd, N_, C_, GradMode::kAccumulate);
  } else {
    linear_backward(l, kFfnIn, dtmp, plan_.dh, b.ln1, GradMode::kAccumulate);  // d ln1
    be_.layernorm_backward(dx, w.ln1.dweight, w.ln1.dbias, dtmp, b.res1, w.ln1.weight,
                           b.ln1_mean, b.ln1_rstd, N_, C_, GradMode::kAssign);
  }
  // dx = d res1 now.
  be_.copy(dbranch, dx, N_ * C_);
  bottleneck_backward(l, 0, b.o, dx, dbranch);
  dropout_backward(dbranch, b.o_mask, C_);
  linear_backward(l, kAttnO, plan_.datt, dbranch, b.att, GradMode::kAssign);
  attention_backward(l);
  const bool norm_trains = w.ln1.dweight || w.ln1.dbias;
  if (pre_norm_) {
    float* dln1 = input_grad || norm_trains ? dtmp : nullptr;
    linear_backward(l, kAttnQ, dln1, plan_.dq, b.ln1, GradMode::kAssign);
    linear_backward(l, kAttnK, dln1, plan_.dk, b.ln1, GradMode::kAccumulate);
    linear_backward(l, kAttnV, dln1, plan_.dv, b.ln1, GradMode::kAccumulate);
    if (dln1)
      be_.layernorm_backward(dx, w.ln1.dweight, w.ln1.dbias, dtmp, x, w.ln1.weight, b.ln1_mean,
                             b.ln1_rstd, N_, C_, GradMode::kAccumulate);
  } else {
    float* dinput = input_grad ? dx : nullptr;
    linear_backward(l, kAttnQ, dinput, plan_.dq, x, GradMode::kAccumulate);
    linear_backward(l, kAttnK, dinput, plan_.dk, x, GradMode::kAccumulate);
    linear_backward(l, kAttnV, dinput, plan_.dv, x, GradMode::kAccumulate);
  }
}

void Pass::embeddings_backward() {
  float* demb = plan_.dx;
  if (!pre_norm_) {
    be_.layernorm_backward(plan_.dtmp, trunk_.emb_ln.dweight, trunk_.emb_ln.dbias, plan_.dx,
                           plan_.emb, trunk_.emb_ln.weight, plan_.embn_mean, plan_.embn_rstd, N_,
                           C_, GradMode::kAssign);
    demb = plan_.dtmp;
  }
  dropout_backward(demb, plan_.emb_mask, C_);
  if (trunk_.dtype_emb)
    for (std::int64_t row = 0; row < N_; ++row)
      be_.add_inplace(trunk_.dtype_emb, demb + row * C_, 1.0f, C_);
  for (std::size_t s = 0; s < segment_count(); ++s) {
    const ModelWeights& m = *seg(s).model;
    Plan::SegmentActs& sa = plan_.segments[s];
    be_.embedding_backward(m.dtok_emb, m.dpos_emb, sa.P ? sa.dprompt : nullptr,
                           demb + sa.row0 * C_, seg(s).tokens, sa.B, sa.T, sa.P, C_);
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
    return pre_norm_ ? plan_.blocks[l - 1].res2 : plan_.blocks[l - 1].ln2;
  };
  const float* y = pre_norm_ ? plan_.lnf : block_input(a_.layers);
  if (pre_norm_) {
    heads_backward(y, plan_.dtmp);
    be_.layernorm_backward(plan_.dx, trunk_.ln_f.dweight, trunk_.ln_f.dbias, plan_.dtmp,
                           block_input(a_.layers), trunk_.ln_f.weight, plan_.lnf_mean,
                           plan_.lnf_rstd, N_, C_, GradMode::kAssign);
  } else {
    heads_backward(y, plan_.dx);
  }
  for (int l = a_.layers - 1; l >= std::max(stop, 0); --l)
    block_backward(l, block_input(l), /*input_grad=*/l > stop);
  if (stop < 0) embeddings_backward();
}

}  // namespace

Result<std::vector<SegmentResult>> SegmentedTransformer::forward(const FamilyBatch& batch) {
  ready_for_backward_ = false;
  SCION_RETURN_IF_ERROR(validate(batch));
  const std::string signature = batch_signature(batch);
  if (signature != plan_->signature) {
    plan_->signature.clear();  // a plan that failed half-way must not be reused
    SCION_RETURN_IF_ERROR(plan_batch(*plan_, batch, backend_));
    plan_->signature = signature;
  }
  batch_ = batch;
  Pass(backend_, *plan_, batch_).forward(results_);
  ready_for_backward_ = true;
  for (const Segment& s : batch.segments) ready_for_backward_ &= s.targets != nullptr;
  return results_;
}

int widest_stage(const FamilyBatch& batch) {
  if (batch.segments.empty()) return 0;
  std::vector<int> final_unit;
  std::size_t widest = 0;
  for (const detail::Stage& stage : build_stages(batch, final_unit))
    widest = std::max(widest, stage.size());
  return static_cast<int>(widest);
}

double forward_flops(const FamilyBatch& batch) {
  if (batch.segments.empty()) return 0.0;
  std::vector<int> final_unit;
  const std::vector<detail::Stage> stages = build_stages(batch, final_unit);
  const spec::Architecture& a = batch.segments[0].model->arch;
  const double C = a.width;
  double flops = 0.0;
  for (int l = 0; l < a.layers; ++l)
    for (const detail::Unit& u : stages[l + 1]) {
      const Segment& seg = batch.segments[u.segment];
      const ModelWeights& m = *seg.model;
      const BlockWeights& bw = m.blocks[l];
      const double rows = static_cast<double>(u.rows);
      const double S = m.prompt_tokens() + seg.length;
      flops += 4.0 * seg.batch * S * (m.prefix_tokens(l) + S) * C;  // scores and mixing
      for (int i = 0; i < kLinearCount; ++i) {
        const LinearWeights& w = bw.linear[i];
        flops += 2.0 * rows * w.in * w.out;
        for (const LoraWeights& lw : bw.lora[i]) flops += 2.0 * rows * lw.rank * (w.in + w.out);
      }
      for (const auto* adapters : {&bw.adapter_attn, &bw.adapter_ffn})
        for (const BottleneckWeights& w : *adapters) flops += 4.0 * rows * C * w.down.out;
    }
  for (const Segment& seg : batch.segments) {
    const ModelWeights& m = *seg.model;
    if (m.objective == spec::Objective::kClassification)
      flops += 2.0 * seg.batch * C * m.classifier.linear.out;
    else
      flops += 2.0 * seg.batch * (m.prompt_tokens() + seg.length) * C * a.vocab_size;
  }
  return flops;
}

Status SegmentedTransformer::backward() {
  if (!ready_for_backward_)
    return invalid_argument(
        "backward() needs a successful forward() with targets on every segment");
  Pass(backend_, *plan_, batch_).backward();
  ready_for_backward_ = false;
  return Status::ok();
}

}  // namespace scion::runtime
