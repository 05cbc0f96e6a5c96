#include "runtime/model/batch_validation.h"

#include <cmath>
#include <string>

#include "runtime/model/batch_plan.h"
#include "runtime/model/kv_cache.h"
#include "runtime/model/text_positions.h"
#include "runtime/op_types.h"

namespace scion::runtime::detail {
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
      if (x.linear[i].weight_storage() != y.linear[i].weight_storage() ||
          x.linear[i].bias != y.linear[i].bias)
        return false;
  }
  return true;
}

// A cache holds one sequence of its own model, in inference, with room for the tokens.
Status check_cache(const FamilyBatch& batch, const Segment& seg) {
  const ModelWeights& m = *seg.model;
  const KvCache& cache = *seg.cache;
  if (batch.training || seg.targets)
    return invalid_argument("model '" + m.name +
                            "': a key/value cache is for inference; train without one");
  if (batch.share_identical)
    return invalid_argument("model '" + m.name +
                            "': a segment with a key/value cache shares no layer applications; "
                            "turn share_identical off");
  if (seg.batch != 1)
    return invalid_argument("model '" + m.name +
                            "': a key/value cache holds one sequence, but "
                            "the segment has " +
                            std::to_string(seg.batch));
  if (&cache.model() != &m)
    return invalid_argument("model '" + m.name + "': the key/value cache was made for '" +
                            cache.model().name + "'");
  if (seg.lengths && seg.lengths[0] != seg.length)
    return invalid_argument("model '" + m.name +
                            "': the tokens run with a key/value cache are all real; drop the "
                            "padding");
  const int needed = cache.cached() + prompt_rows(seg) + seg.length;
  if (needed > cache.capacity())
    return invalid_argument("model '" + m.name + "': the key/value cache has room for " +
                            std::to_string(cache.capacity()) + " positions, " +
                            std::to_string(needed) + " needed");
  return Status::ok();
}

}  // namespace

Status validate_batch(const FamilyBatch& batch) {
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
    if (seg.cache) SCION_RETURN_IF_ERROR(check_cache(batch, seg));
    if (seg.last_position_logits && (batch.training || seg.targets))
      return invalid_argument("model '" + m.name +
                              "': logits of the last position alone are for inference; a loss "
                              "needs every position's");
    if (first_position(seg) + seg.length + prompt_rows(seg) + position_shift(m) > a.max_length)
      return invalid_argument(
          "model '" + m.name +
          "': " + (seg.cache ? std::to_string(first_position(seg)) + " cached + " : std::string()) +
          std::to_string(seg.length) + " tokens + " + std::to_string(prompt_rows(seg)) +
          " prompt tokens + " + std::to_string(position_shift(m)) +
          " prefix positions exceed max_length " + std::to_string(a.max_length));
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
    if (seg.token_types && m.type_emb)
      for (std::int64_t i = 0; i < n; ++i)
        if (seg.token_types[i] < 0 || seg.token_types[i] >= a.type_vocab_size)
          return invalid_argument("model '" + m.name + "': token type " +
                                  std::to_string(seg.token_types[i]) + " outside 0.." +
                                  std::to_string(a.type_vocab_size - 1));
    const bool head = m.objective == spec::Objective::kClassification;
    const spec::HeadTask task = head ? m.classifier.task : spec::HeadTask::kClassification;
    const bool by_values =
        head && (task == spec::HeadTask::kRegression || task == spec::HeadTask::kMultiLabel);
    if (by_values) {
      if (seg.targets)
        return invalid_argument("model '" + m.name + "': a " + spec::head_task_name(task) +
                                " head trains on values, not class targets");
      if (!seg.values) continue;
      const std::int64_t count = static_cast<std::int64_t>(seg.batch) * m.classifier.linear.out;
      for (std::int64_t i = 0; i < count; ++i)
        if (!std::isfinite(seg.values[i]) ||
            (task == spec::HeadTask::kMultiLabel && (seg.values[i] < 0 || seg.values[i] > 1)))
          return invalid_argument(
              "model '" + m.name + "': target value " + std::to_string(seg.values[i]) +
              (task == spec::HeadTask::kMultiLabel ? " outside 0..1" : " is not finite"));
      continue;
    }
    if (seg.values)
      return invalid_argument("model '" + m.name + "' takes class targets, not values");
    if (!seg.targets) continue;
    const int classes = head ? m.classifier.linear.out : a.vocab_size;
    const std::int64_t targets = head && !m.classifier.per_token() ? seg.batch : n;
    for (std::int64_t i = 0; i < targets; ++i) {
      const std::int32_t t = seg.targets[i];
      if (t != kIgnoreIndex && (t < 0 || t >= classes))
        return invalid_argument("model '" + m.name + "': target " + std::to_string(t) +
                                " outside 0.." + std::to_string(classes - 1));
    }
  }
  return Status::ok();
}

}  // namespace scion::runtime::detail
