#include "runtime/evaluation/family_evaluator.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "runtime/data/batcher.h"
#include "runtime/data/tokenized_dataset.h"
#include "runtime/evaluation/trunk_groups.h"
#include "runtime/text_positions.h"

namespace scion::runtime {

std::vector<float> softmax(std::span<const float> logits) {
  std::vector<float> p(logits.size());
  if (logits.empty()) return p;
  const double top = *std::max_element(logits.begin(), logits.end());
  double sum = 0;
  for (std::size_t k = 0; k < logits.size(); ++k) sum += std::exp(double(logits[k]) - top);
  for (std::size_t k = 0; k < logits.size(); ++k)
    p[k] = static_cast<float>(std::exp(double(logits[k]) - top) / sum);
  return p;
}

double log_softmax(std::span<const float> logits, std::size_t k) {
  const double top = *std::max_element(logits.begin(), logits.end());
  double sum = 0;
  for (float logit : logits) sum += std::exp(double(logit) - top);
  return double(logits[k]) - top - std::log(sum);
}

std::size_t text_capacity(const EvaluatedModel& model) {
  const ModelWeights& w = *model.weights;
  return static_cast<std::size_t>(
      std::max(0, data::content_capacity(false, w.arch.max_length - positions_before_text(w))));
}

Result<std::vector<std::vector<Classification>>> FamilyEvaluator::classify(
    std::span<const EvaluatedModel> models, std::span<const std::string> texts,
    const EvaluationOptions& options) {
  if (options.chunk_size <= 0)
    return invalid_argument("the evaluation chunk size must be positive");
  std::vector<std::vector<Classification>> outputs(models.size());
  std::vector<const ModelWeights*> weights;
  for (std::size_t m = 0; m < models.size(); ++m) {
    const EvaluatedModel& model = models[m];
    if (!model.weights->has_classifier)
      return invalid_argument("model '" + model.weights->name +
                              "' has no classifier head to evaluate");
    const int K = model.weights->classifier.linear.out;
    if (static_cast<int>(model.labels.size()) != K)
      return invalid_argument("model '" + model.weights->name + "' has " + std::to_string(K) +
                              " classes but " + std::to_string(model.labels.size()) +
                              " label names");
    if (model.weights->arch.max_length - positions_before_text(*model.weights) < 3)
      return invalid_argument("model '" + model.weights->name +
                              "': max_length leaves no room for text after its prompt tokens "
                              "and prefix positions");
    weights.push_back(model.weights);
  }
  // Models bound to the same trunk storage share batches.
  for (const std::vector<std::size_t>& members : group_by_trunk(weights))
    SCION_RETURN_IF_ERROR(classify_group(models, members, texts, options, outputs));
  return outputs;
}

Status FamilyEvaluator::classify_group(std::span<const EvaluatedModel> models,
                                       const std::vector<std::size_t>& members,
                                       std::span<const std::string> texts,
                                       const EvaluationOptions& options,
                                       std::vector<std::vector<Classification>>& outputs) {
  // Models on one trunk descend from one base, so they share its tokenizer.
  const text::Tokenizer& tokenizer = *models[members.front()].tokenizer;
  for (std::size_t m : members) outputs[m].reserve(texts.size());
  // The rows of texts [begin, end), framed by each model with room for its own prompt.
  struct Chunk {
    data::TokenizedDataset tokens;
    std::vector<std::int64_t> rows;
    std::vector<data::Batch> batches;
    FamilyBatch batch;
  };
  auto make_chunk = [&](std::size_t begin, std::size_t end, Chunk& c) {
    c.tokens = {};
    c.tokens.specials = tokenizer.special_tokens();
    c.tokens.vocab_size = tokenizer.vocab_size();
    for (std::size_t t = begin; t < end; ++t) c.tokens.rows.push_back(tokenizer.encode(texts[t]));
    c.tokens.labels.assign(c.tokens.rows.size(),
                           0);  // batching wants labels; inference ignores them
    c.rows.resize(c.tokens.rows.size());
    std::iota(c.rows.begin(), c.rows.end(), 0);
    c.batches.clear();
    c.batches.reserve(members.size());
    c.batch = FamilyBatch{.share_identical = options.share_identical};
    for (std::size_t m : members) {
      const ModelWeights& w = *models[m].weights;
      c.batches.push_back(data::make_classification_batch(
          c.tokens, c.rows, {.max_length = w.arch.max_length - positions_before_text(w)}));
      const data::Batch& b = c.batches.back();
      c.batch.segments.push_back({.model = &w,
                                  .batch = b.batch_size,
                                  .length = b.length,
                                  .tokens = b.tokens.data(),
                                  .lengths = b.lengths.data()});
    }
  };
  // Texts per chunk: the branches of the trie at its widest layer, each over up to
  // max_length positions per text, must fit in max_rows.
  Chunk chunk;
  if (texts.empty()) return Status::ok();
  make_chunk(0, 1, chunk);
  const std::int64_t rows_per_text = static_cast<std::int64_t>(widest_stage(chunk.batch)) *
                                     models[members.front()].weights->arch.max_length;
  const auto chunk_size = static_cast<std::size_t>(std::clamp<std::int64_t>(
      options.max_rows / std::max<std::int64_t>(rows_per_text, 1), 1, options.chunk_size));
  for (std::size_t begin = 0; begin < texts.size(); begin += chunk_size) {
    make_chunk(begin, std::min(texts.size(), begin + chunk_size), chunk);
    const FamilyBatch& batch = chunk.batch;
    const std::vector<std::int64_t>& rows = chunk.rows;
    auto results = net_.forward(batch);
    if (!results) return results.status();
    for (std::size_t s = 0; s < members.size(); ++s) {
      const EvaluatedModel& model = models[members[s]];
      const Tensor& logits = (*results)[s].logits;
      const auto K = static_cast<std::size_t>(logits.shape.at(1));
      const std::vector<float> logit_rows = copy_to_host(backend_, logits);
      for (std::size_t r = 0; r < rows.size(); ++r) {
        Classification out;
        out.labels = model.labels;
        out.probabilities = softmax({logit_rows.data() + r * K, K});
        outputs[members[s]].push_back(std::move(out));
      }
    }
  }
  return Status::ok();
}

}  // namespace scion::runtime
