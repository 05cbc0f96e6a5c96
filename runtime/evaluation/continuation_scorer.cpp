#include "runtime/evaluation/continuation_scorer.h"

#include <fmt/format.h>

#include <algorithm>

#include "runtime/evaluation/trunk_groups.h"
#include "runtime/model/text_positions.h"

namespace scion::runtime {
namespace {

using Tokens = std::vector<std::int32_t>;

struct EncodedQuery {
  Tokens input, continuation;
};

// A continuation token whose log-probability counts toward a query's score: read from
// the logits of row `row` at position `position` (after the segment's prompt tokens).
struct Target {
  std::size_t query = 0;
  int row = 0;
  int position = 0;
  std::int32_t token = 0;
};

// One model's rows of a chunk, padded into the (B, T) arrays its Segment points at.
struct SegmentRows {
  std::vector<Tokens> rows;
  std::vector<Target> targets;
  int length = 0;                     // T: the longest row
  std::vector<std::int32_t> tokens;   // (B, T)
  std::vector<std::int32_t> lengths;  // (B)
};

bool is_causal(const ModelWeights& w) { return w.objective == spec::Objective::kCausalLm; }

// Token positions one of the model's rows may hold: its prompt tokens come first, and a
// prefix may shift the text's positions (runtime/model/text_positions.h).
std::size_t row_capacity(const ModelWeights& w) {
  return static_cast<std::size_t>(std::max(0, w.arch.max_length - positions_before_text(w)));
}

Status check_scorable(const ScoredModel& model) {
  const ModelWeights& w = *model.weights;
  const bool decoder = w.arch.kind == spec::ArchitectureKind::kDecoder;
  if (w.objective == spec::Objective::kClassification)
    return invalid_argument("model '" + w.name +
                            "' is resolved as a classifier; score continuations with a language "
                            "model (objective causal or masked LM)");
  if (decoder != is_causal(w))
    return invalid_argument("model '" + w.name + "' is " + (decoder ? "a decoder" : "an encoder") +
                            " but resolved for " + (is_causal(w) ? "causal" : "masked") +
                            " LM; a decoder scores with causal LM, an encoder with masked LM");
  if (!decoder && model.tokenizer->special_tokens().mask == text::kNoToken)
    return invalid_argument("model '" + w.name +
                            "' is a masked LM whose tokenizer has no [MASK] token to score with");
  return Status::ok();
}

Status check_fits(const ModelWeights& w, const ContinuationQuery& query,
                  const EncodedQuery& encoded) {
  if (encoded.continuation.empty())
    return invalid_argument(fmt::format(
        "the continuation after \"{}\" is empty; give each continuation at least one character",
        query.input));
  if (encoded.continuation.size() > max_continuation_tokens(w))
    return invalid_argument(fmt::format(
        "model '{}' cannot score the continuation \"{}\": it is {} tokens, and a row of this "
        "model holds at most {} continuation tokens (max_length {}, {} prompt tokens, {} "
        "prefix positions{}); shorten the continuation",
        w.name, query.continuation, encoded.continuation.size(), max_continuation_tokens(w),
        w.arch.max_length, w.prompt_tokens(), position_shift(w),
        is_causal(w) ? "" : ", [CLS] and [SEP]"));
  return Status::ok();
}

// Appends the rows and targets of one query, the input truncated from the left.
// REQUIRES: check_fits(w, ..., q) passed.
void add_rows(const EncodedQuery& q, std::size_t query, const ModelWeights& w,
              const text::SpecialTokens& specials, SegmentRows& out) {
  const Tokens& in = q.input;
  const Tokens& co = q.continuation;
  const auto append = [](Tokens& row, auto first, auto last) {
    row.insert(row.end(), first, last);
  };
  if (is_causal(w)) {
    // [BOS] input continuation[:-1]: the logit at position t predicts token t + 1.
    const std::size_t keep = std::min(in.size(), row_capacity(w) - co.size());
    Tokens row{specials.cls};
    append(row, in.end() - static_cast<std::ptrdiff_t>(keep), in.end());
    append(row, co.begin(), co.end() - 1);
    const int r = static_cast<int>(out.rows.size());
    for (std::size_t j = 0; j < co.size(); ++j)
      out.targets.push_back({query, r, static_cast<int>(keep + j), co[j]});
    out.rows.push_back(std::move(row));
    return;
  }
  // [CLS] input continuation [SEP], once per continuation token with that token masked.
  const std::size_t keep = std::min(in.size(), row_capacity(w) - 2 - co.size());
  Tokens framed{specials.cls};
  append(framed, in.end() - static_cast<std::ptrdiff_t>(keep), in.end());
  append(framed, co.begin(), co.end());
  framed.push_back(specials.sep);
  for (std::size_t j = 0; j < co.size(); ++j) {
    const auto position = static_cast<int>(1 + keep + j);
    Tokens row = framed;
    row[static_cast<std::size_t>(position)] = specials.mask;
    out.targets.push_back({query, static_cast<int>(out.rows.size()), position, co[j]});
    out.rows.push_back(std::move(row));
  }
}

void pad_rows(SegmentRows& s, std::int32_t pad) {
  s.length = 0;
  for (const Tokens& row : s.rows) s.length = std::max(s.length, static_cast<int>(row.size()));
  const auto T = static_cast<std::size_t>(s.length);
  s.tokens.assign(s.rows.size() * T, pad);
  s.lengths.clear();
  for (std::size_t b = 0; b < s.rows.size(); ++b) {
    std::copy(s.rows[b].begin(), s.rows[b].end(),
              s.tokens.begin() + static_cast<std::ptrdiff_t>(b * T));
    s.lengths.push_back(static_cast<std::int32_t>(s.rows[b].size()));
  }
}

// The rows of queries [begin, end) for every model of one trunk, and the FamilyBatch over
// them: one segment per model over the same rows.
struct Chunk {
  std::vector<SegmentRows> segments;  // one per model; the batch points into them
  FamilyBatch batch;
};

// Cuts the queries into chunks and lays out each one.
class ChunkPlanner {
 public:
  ChunkPlanner(std::span<const EncodedQuery> encoded, std::span<const ModelWeights* const> models,
               const text::SpecialTokens& specials, const EvaluationOptions& options)
      : encoded_(encoded),
        models_(models),
        specials_(specials),
        options_(options),
        causal_(is_causal(*models.front())) {
    for (const ModelWeights* w : models) most_prompt_ = std::max(most_prompt_, w->prompt_tokens());
    Chunk one;
    make_chunk(0, 1, one);
    widest_ = std::max(1, widest_stage(one.batch));
  }

  void make_chunk(std::size_t begin, std::size_t end, Chunk& c) const {
    c.segments.assign(models_.size(), SegmentRows{});
    c.batch = FamilyBatch{.share_identical = options_.share_identical};
    for (std::size_t s = 0; s < models_.size(); ++s) {
      SegmentRows& rows = c.segments[s];
      for (std::size_t q = begin; q < end; ++q)
        add_rows(encoded_[q], q, *models_[s], specials_, rows);
      pad_rows(rows, specials_.pad);
      c.batch.segments.push_back({.model = models_[s],
                                  .batch = static_cast<int>(rows.rows.size()),
                                  .length = rows.length,
                                  .tokens = rows.tokens.data(),
                                  .lengths = rows.lengths.data()});
    }
  }

  // The end of the chunk that starts at `begin`: at most chunk_size queries, and at least
  // one, whose rows × positions (prompt included) × the trie's widest stage fit max_rows.
  std::size_t chunk_end(std::size_t begin) const {
    std::size_t end = begin;
    std::int64_t rows = 0, positions = 0;
    while (end < encoded_.size() && end - begin < static_cast<std::size_t>(options_.chunk_size)) {
      const std::int64_t r = rows + rows_of(end);
      const std::int64_t p = std::max(positions, positions_of(end));
      if (end > begin && widest_ * r * p > options_.max_rows) break;
      rows = r;
      positions = p;
      ++end;
    }
    return end;
  }

 private:
  // One causal row per query, or one masked row per continuation token.
  std::int64_t rows_of(std::size_t q) const {
    return causal_ ? 1 : static_cast<std::int64_t>(encoded_[q].continuation.size());
  }
  std::int64_t positions_of(std::size_t q) const {
    const std::size_t framed =
        encoded_[q].input.size() + encoded_[q].continuation.size() + (causal_ ? 0 : 2);
    return std::min<std::int64_t>(static_cast<std::int64_t>(framed),
                                  models_.front()->arch.max_length) +
           most_prompt_;
  }

  std::span<const EncodedQuery> encoded_;
  std::span<const ModelWeights* const> models_;
  const text::SpecialTokens& specials_;
  const EvaluationOptions& options_;
  const bool causal_;
  int most_prompt_ = 0;
  std::int64_t widest_ = 1;
};

}  // namespace

// A causal row drops the continuation's last token as input (it is only predicted); a
// masked row adds [CLS] and [SEP].
std::size_t max_continuation_tokens(const ModelWeights& model) {
  const std::size_t capacity = row_capacity(model);
  if (is_causal(model)) return capacity;
  return capacity >= 2 ? capacity - 2 : 0;
}

std::size_t continuation_tokens(const ScoredModel& model, std::string_view continuation) {
  return model.tokenizer->encode(continuation).size();
}

Result<std::vector<std::vector<double>>> ContinuationScorer::score(
    std::span<const ScoredModel> models, std::span<const ContinuationQuery> queries,
    const EvaluationOptions& options) {
  if (options.chunk_size <= 0)
    return invalid_argument("the evaluation chunk size must be positive");
  std::vector<const ModelWeights*> weights;
  for (const ScoredModel& model : models) {
    SCION_RETURN_IF_ERROR(check_scorable(model));
    weights.push_back(model.weights);
  }
  std::vector<std::vector<double>> scores(models.size(), std::vector<double>(queries.size(), 0.0));
  // Models bound to the same trunk storage share batches.
  for (const std::vector<std::size_t>& members : group_by_trunk(weights))
    SCION_RETURN_IF_ERROR(score_group(models, members, queries, options, scores));
  return scores;
}

Status ContinuationScorer::score_group(std::span<const ScoredModel> models,
                                       const std::vector<std::size_t>& members,
                                       std::span<const ContinuationQuery> queries,
                                       const EvaluationOptions& options,
                                       std::vector<std::vector<double>>& scores) {
  if (queries.empty()) return Status::ok();
  // Models on one trunk descend from one base, so they share its tokenizer and kind.
  const text::Tokenizer& tokenizer = *models[members.front()].tokenizer;
  std::vector<EncodedQuery> encoded;
  encoded.reserve(queries.size());
  for (const ContinuationQuery& q : queries) {
    encoded.push_back({tokenizer.encode(q.input), tokenizer.encode(q.continuation)});
    for (std::size_t m : members)
      SCION_RETURN_IF_ERROR(check_fits(*models[m].weights, q, encoded.back()));
  }
  std::vector<const ModelWeights*> weights;
  for (std::size_t m : members) weights.push_back(models[m].weights);
  const ChunkPlanner planner(encoded, weights, tokenizer.special_tokens(), options);
  Chunk chunk;
  for (std::size_t begin = 0; begin < queries.size();) {
    const std::size_t end = planner.chunk_end(begin);
    planner.make_chunk(begin, end, chunk);
    auto results = net_.forward(chunk.batch);
    if (!results) return results.status();
    std::vector<float> row;  // one position's logits, copied from the backend
    for (std::size_t s = 0; s < members.size(); ++s) {
      const Tensor& logits = (*results)[s].logits;  // (B, P + T, V), backend memory
      const std::int64_t S = logits.shape.at(1), V = logits.shape.at(2);
      const std::int64_t P = weights[s]->prompt_tokens();
      std::vector<double>& out = scores[members[s]];
      row.resize(static_cast<std::size_t>(V));
      for (const Target& t : chunk.segments[s].targets) {
        backend_.copy_to_host(row.data(), logits.f32() + (t.row * S + P + t.position) * V,
                              row.size() * sizeof(float));
        out[t.query] += log_softmax(row, static_cast<std::size_t>(t.token));
      }
    }
    begin = end;
  }
  return Status::ok();
}

}  // namespace scion::runtime
