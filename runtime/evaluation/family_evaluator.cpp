#include "runtime/evaluation/family_evaluator.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "runtime/data/batcher.h"
#include "runtime/data/tokenized_dataset.h"
#include "runtime/evaluation/trunk_groups.h"
#include "runtime/model/text_positions.h"

namespace scion::runtime {

double log_softmax(std::span<const float> logits, std::size_t k) {
  const double top = *std::max_element(logits.begin(), logits.end());
  double sum = 0;
  for (float logit : logits) sum += std::exp(double(logit) - top);
  return double(logits[k]) - top - std::log(sum);
}

std::vector<std::string> split_words(std::string_view text) {
  std::vector<std::string> words;
  std::size_t i = 0;
  const auto space = [](char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
  };
  while (i < text.size()) {
    while (i < text.size() && space(text[i])) ++i;
    const std::size_t start = i;
    while (i < text.size() && !space(text[i])) ++i;
    if (i > start) words.emplace_back(text.substr(start, i - start));
  }
  return words;
}

std::size_t input_tokens(const EvaluatedModel& model, const ModelInput& input) {
  std::size_t tokens = 0;
  if (model.weights->has_classifier && model.weights->classifier.per_token()) {
    std::vector<std::int32_t> ids, starts;
    model.tokenizer->encode_words(split_words(input.text), ids, starts);
    tokens = ids.size();
  } else {
    tokens = model.tokenizer->encode(input.text).size();
  }
  if (input.pair)
    tokens += model.tokenizer->encode(*input.pair).size() +
              model.tokenizer->pair_framing().specials() - 2;
  return tokens;
}

std::size_t text_capacity(const EvaluatedModel& model) {
  const ModelWeights& w = *model.weights;
  return static_cast<std::size_t>(
      std::max(0, data::content_capacity(false, w.arch.max_length - positions_before_text(w))));
}

Result<std::vector<std::vector<HeadOutput>>> FamilyEvaluator::classify(
    std::span<const EvaluatedModel> models, std::span<const std::string> texts,
    const EvaluationOptions& options) {
  std::vector<ModelInput> inputs;
  for (const std::string& text : texts) inputs.push_back({text, std::nullopt});
  return classify(models, inputs, options);
}

Result<std::vector<std::vector<HeadOutput>>> FamilyEvaluator::classify(
    std::span<const EvaluatedModel> models, std::span<const ModelInput> inputs,
    const EvaluationOptions& options) {
  if (options.chunk_size <= 0)
    return invalid_argument("the evaluation chunk size must be positive");
  std::vector<std::vector<HeadOutput>> outputs(models.size());
  std::vector<const ModelWeights*> weights;
  for (std::size_t m = 0; m < models.size(); ++m) {
    const EvaluatedModel& model = models[m];
    if (!model.weights->has_classifier)
      return invalid_argument("model '" + model.weights->name + "' has no head to evaluate");
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
    SCION_RETURN_IF_ERROR(classify_group(models, members, inputs, options, outputs));
  return outputs;
}

namespace {

// The rows of inputs [begin, end) as one kind of model reads them: texts (and pairs), or a
// token classifier's words.
data::TokenizedDataset tokenize_inputs(std::span<const ModelInput> inputs, std::size_t begin,
                                       std::size_t end, const text::Tokenizer& tokenizer,
                                       bool words) {
  data::TokenizedDataset rows;
  rows.specials = tokenizer.special_tokens();
  rows.vocab_size = tokenizer.vocab_size();
  const bool pairs = inputs[begin].pair.has_value();
  if (pairs) rows.pair_framing = tokenizer.pair_framing();
  for (std::size_t t = begin; t < end; ++t) {
    if (words) {
      std::vector<std::int32_t> ids, starts;
      tokenizer.encode_words(split_words(inputs[t].text), ids, starts);
      rows.rows.push_back(std::move(ids));
      rows.word_starts.push_back(std::move(starts));
    } else {
      rows.rows.push_back(tokenizer.encode(inputs[t].text));
    }
    if (pairs) rows.pair_rows.push_back(tokenizer.encode(inputs[t].pair.value_or("")));
  }
  return rows;
}

// Model `model`'s output on row r of a batch from its logits (host copy).
HeadOutput head_output(const EvaluatedModel& model, const std::vector<float>& logits,
                       const Tensor& shape, std::size_t r, const data::TokenizedDataset& rows,
                       const data::Batch& batch, const ModelInput& input) {
  const ModelWeights& w = *model.weights;
  HeadOutput out{.task = w.classifier.task, .labels = model.labels, .threshold = model.threshold};
  const auto K = static_cast<std::size_t>(shape.shape.back());
  if (!w.classifier.per_token()) {
    const std::span<const float> row(logits.data() + r * K, K);
    switch (w.classifier.task) {
      case spec::HeadTask::kRegression:
        out.values.assign(row.begin(), row.end());
        break;
      case spec::HeadTask::kMultiLabel:
        out.probabilities = sigmoid(row);
        break;
      default:
        out.probabilities = softmax(row);
        break;
    }
    return out;
  }
  const auto S = static_cast<std::size_t>(shape.shape.at(1));
  const std::size_t P = S - static_cast<std::size_t>(batch.length);
  const std::size_t framed = static_cast<std::size_t>(batch.lengths[r]);
  out.words = split_words(input.text);
  for (const std::int32_t start : rows.word_starts[r]) {
    const std::size_t position = 1 + static_cast<std::size_t>(start);
    if (position + 1 >= framed) {  // cut off by truncation
      out.word_probabilities.emplace_back();
      continue;
    }
    out.word_probabilities.push_back(softmax({logits.data() + (r * S + P + position) * K, K}));
  }
  return out;
}

}  // namespace

Status FamilyEvaluator::classify_group(std::span<const EvaluatedModel> models,
                                       const std::vector<std::size_t>& members,
                                       std::span<const ModelInput> inputs,
                                       const EvaluationOptions& options,
                                       std::vector<std::vector<HeadOutput>>& outputs) {
  // Models on one trunk descend from one base, so they share its tokenizer.
  const text::Tokenizer& tokenizer = *models[members.front()].tokenizer;
  for (std::size_t m : members) outputs[m].reserve(inputs.size());
  const auto per_token = [&](std::size_t m) { return models[m].weights->classifier.per_token(); };
  // The rows of inputs [begin, end), framed by each model with room for its own prompt.
  // Inputs of one pass are all texts or all pairs (a dataset's rows; predict's --pair).
  struct Chunk {
    data::TokenizedDataset texts, words;
    std::vector<std::int64_t> rows;
    std::vector<data::Batch> batches;
    FamilyBatch batch;
  };
  auto make_chunk = [&](std::size_t begin, std::size_t end, Chunk& c) {
    c.texts = tokenize_inputs(inputs, begin, end, tokenizer, false);
    bool any_words = false;
    for (std::size_t m : members) any_words = any_words || per_token(m);
    if (any_words) c.words = tokenize_inputs(inputs, begin, end, tokenizer, true);
    c.rows.resize(end - begin);
    std::iota(c.rows.begin(), c.rows.end(), 0);
    c.batches.clear();
    c.batches.reserve(members.size());
    c.batch = FamilyBatch{.share_identical = options.share_identical};
    for (std::size_t m : members) {
      const ModelWeights& w = *models[m].weights;
      c.batches.push_back(data::make_classification_batch(
          per_token(m) ? c.words : c.texts, c.rows,
          {.max_length = w.arch.max_length - positions_before_text(w)}));
      const data::Batch& b = c.batches.back();
      c.batch.segments.push_back(
          {.model = &w,
           .batch = b.batch_size,
           .length = b.length,
           .tokens = b.tokens.data(),
           .lengths = b.lengths.data(),
           .token_types = b.token_types.empty() ? nullptr : b.token_types.data()});
    }
  };
  // Inputs per chunk: the branches of the trie at its widest layer, each over up to
  // max_length positions per input, must fit in max_rows.
  Chunk chunk;
  if (inputs.empty()) return Status::ok();
  for (const ModelInput& input : inputs)
    if (input.pair.has_value() != inputs.front().pair.has_value())
      return invalid_argument(
          "one evaluation mixes single texts and sentence pairs; evaluate "
          "them separately");
  make_chunk(0, 1, chunk);
  const std::int64_t rows_per_text = static_cast<std::int64_t>(widest_stage(chunk.batch)) *
                                     models[members.front()].weights->arch.max_length;
  const auto chunk_size = static_cast<std::size_t>(std::clamp<std::int64_t>(
      options.max_rows / std::max<std::int64_t>(rows_per_text, 1), 1, options.chunk_size));
  for (std::size_t begin = 0; begin < inputs.size(); begin += chunk_size) {
    const std::size_t end = std::min(inputs.size(), begin + chunk_size);
    make_chunk(begin, end, chunk);
    auto results = net_.forward(chunk.batch);
    if (!results) return results.status();
    for (std::size_t s = 0; s < members.size(); ++s) {
      const EvaluatedModel& model = models[members[s]];
      const Tensor& logits = (*results)[s].logits;
      const std::vector<float> host = copy_to_host(backend_, logits);
      const data::TokenizedDataset& rows = per_token(members[s]) ? chunk.words : chunk.texts;
      for (std::size_t r = 0; r < chunk.rows.size(); ++r)
        outputs[members[s]].push_back(
            head_output(model, host, logits, r, rows, chunk.batches[s], inputs[begin + r]));
    }
  }
  return Status::ok();
}

}  // namespace scion::runtime
