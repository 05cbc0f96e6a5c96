// widest_stage and forward_flops (transformer.h): what a batch costs, read off its trie of
// layer applications without running it.
#include <algorithm>

#include "runtime/model/layer_trie.h"
#include "runtime/model/transformer.h"

namespace scion::runtime {

int widest_stage(const FamilyBatch& batch) {
  if (batch.segments.empty()) return 0;
  std::vector<int> final_unit;
  std::size_t widest = 0;
  for (const detail::Stage& stage : detail::build_stages(batch, final_unit))
    widest = std::max(widest, stage.size());
  return static_cast<int>(widest);
}

double forward_flops(const FamilyBatch& batch) {
  if (batch.segments.empty()) return 0.0;
  std::vector<int> final_unit;
  const std::vector<detail::Stage> stages = detail::build_stages(batch, final_unit);
  const spec::Architecture& a = batch.segments[0].model->arch;
  const double C = a.width;
  double flops = 0.0;
  for (int l = 0; l < a.layers; ++l)
    for (const detail::Unit& u : stages[l + 1]) {
      const Segment& seg = batch.segments[u.segment];
      const ModelWeights& m = *seg.model;
      const BlockWeights& bw = m.blocks[l];
      const double rows = static_cast<double>(u.rows);
      const double S = prompt_rows(seg) + seg.length;
      flops += 4.0 * seg.batch * S * (keys_before(seg, l) + S) * C;  // scores and mixing
      for (int i = 0; i < kLinearCount; ++i) {
        const LinearWeights& w = bw.linear[i];
        flops += 2.0 * rows * w.in * w.out;
        for (const auto& adaptation : bw.adaptations[i])
          flops += adaptation->forward_flops(u.rows, w.in, w.out);
      }
      for (const auto& adaptations : bw.block_adaptations)
        for (const auto& adaptation : adaptations) flops += adaptation->forward_flops(u.rows, C);
    }
  for (const Segment& seg : batch.segments) {
    const ModelWeights& m = *seg.model;
    if (m.objective == spec::Objective::kClassification && m.classifier.per_token())
      flops += 2.0 * seg.batch * (prompt_rows(seg) + seg.length) * C * m.classifier.linear.out;
    else if (m.objective == spec::Objective::kClassification)
      flops += 2.0 * seg.batch * C * m.classifier.linear.out;
    else
      flops += 2.0 * seg.batch * (seg.last_position_logits ? 1 : prompt_rows(seg) + seg.length) *
               C * a.vocab_size;
  }
  return flops;
}

}  // namespace scion::runtime
