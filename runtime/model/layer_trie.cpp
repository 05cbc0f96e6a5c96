#include "runtime/model/layer_trie.h"

#include <cstring>

#include "runtime/model/kv_cache.h"
#include "runtime/model/text_positions.h"

namespace scion::runtime::detail {
namespace {

bool same_inputs(const Segment& a, const Segment& b) {
  if (a.batch != b.batch || a.length != b.length) return false;
  const ModelWeights& x = *a.model;
  const ModelWeights& y = *b.model;
  // A text shifted behind a prefix adds other position rows (text_positions.h).
  if (x.prompts.size() != y.prompts.size() || position_shift(x) != position_shift(y)) return false;
  for (std::size_t i = 0; i < x.prompts.size(); ++i)
    if (x.prompts[i].embeddings != y.prompts[i].embeddings || x.prompts[i].tokens != y.prompts[i].tokens)
      return false;
  const auto n = static_cast<std::size_t>(a.batch) * static_cast<std::size_t>(a.length);
  if (a.tokens != b.tokens && std::memcmp(a.tokens, b.tokens, n * sizeof(std::int32_t)) != 0)
    return false;
  // Token types count only where the trunk adds their embeddings (the same trunk here).
  if (x.type_emb && (a.token_types != nullptr) != (b.token_types != nullptr)) return false;
  if (x.type_emb && a.token_types && a.token_types != b.token_types &&
      std::memcmp(a.token_types, b.token_types, n * sizeof(std::int32_t)) != 0)
    return false;
  if (!a.lengths || !b.lengths) return a.lengths == b.lengths;
  return a.lengths == b.lengths ||
         std::memcmp(a.lengths, b.lengths, static_cast<std::size_t>(a.batch) * sizeof(std::int32_t)) == 0;
}

// Whether two models apply the same parameters in block l (the trunk's are shared).
bool same_block(const ModelWeights& x, const ModelWeights& y, int l) {
  const BlockWeights& a = x.blocks[l];
  const BlockWeights& b = y.blocks[l];
  if (a.prefixes.size() != b.prefixes.size()) return false;
  for (std::size_t j = 0; j < a.prefixes.size(); ++j)
    if (a.prefixes[j].keys != b.prefixes[j].keys || a.prefixes[j].values != b.prefixes[j].values)
      return false;
  for (int i = 0; i < kLinearCount; ++i) {
    if (a.adaptations[i].size() != b.adaptations[i].size()) return false;
    for (std::size_t j = 0; j < a.adaptations[i].size(); ++j)
      if (!a.adaptations[i][j]->same_as(*b.adaptations[i][j])) return false;
  }
  for (int site = 0; site < kBlockSiteCount; ++site) {
    const auto& p = a.block_adaptations[site];
    const auto& q = b.block_adaptations[site];
    if (p.size() != q.size()) return false;
    for (std::size_t j = 0; j < p.size(); ++j)
      if (!p[j]->same_as(*q[j])) return false;
  }
  return true;
}

}  // namespace

std::int64_t segment_probs(const Segment& seg, int block) {
  const std::int64_t S = prompt_rows(seg) + seg.length;
  // With a cache, as many keys as it can ever hold: the layout then stays the same while
  // it fills.
  const std::int64_t keys = seg.cache ? seg.cache->prefix_rows(block) + seg.cache->capacity()
                                      : seg.model->prefix_tokens(block) + S;
  return seg.batch * seg.model->arch.heads * S * keys;
}

std::vector<Stage> build_stages(const FamilyBatch& batch, std::vector<int>& final_unit) {
  const int L = batch.segments[0].model->arch.layers;
  const std::size_t n = batch.segments.size();
  std::vector<Stage> stages(static_cast<std::size_t>(L) + 1);
  std::vector<int> unit_of(n), previous(n);
  for (int k = 0; k <= L; ++k) {
    Stage& stage = stages[k];
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
            static_cast<std::int64_t>(seg.batch) * (prompt_rows(seg) + seg.length);
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

std::int64_t stage_rows(const Stage& stage) {
  std::int64_t rows = 0;
  for (const Unit& u : stage) rows += u.rows;
  return rows;
}

std::int64_t stage_probs(const Stage& stage, const FamilyBatch& batch, int block) {
  std::int64_t probs = 0;
  for (const Unit& u : stage) probs += segment_probs(batch.segments[u.segment], block);
  return probs;
}

}  // namespace scion::runtime::detail
