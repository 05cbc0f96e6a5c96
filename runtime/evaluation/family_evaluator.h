// FamilyEvaluator: runs many inputs through many head models of a family (classifiers,
// regressors, multi-label and token classifiers), deduplicated and co-batched.
//
// The texts are cut into chunks of `chunk_size` rows. For each chunk, the models that
// share one trunk storage (descendants of one base loaded into one
// runtime::ParameterStore that do not retrain trunk weights) form ONE FamilyBatch with one
// segment per model over the same rows, with share_identical on: a layer application that
// several models share (same input, same parameters) is computed once — head-only
// descendants share the whole trunk, a LoRA in the top layer branches there — and the
// branches that remain at a layer are co-batched over its frozen products, each applying
// its own adapters to its own rows. Models of different trunks (another base, or a BitFit
// / full model with trunk values of its own) go in separate batches. Memory is bounded
// by the chunk: activations for at most chunk_size × models rows (one block's at a time),
// plus the outputs returned.
//
// Each model sees a row framed as in training ([CLS] text [SEP], truncated from the end; a
// sentence pair as its tokenizer frames one, truncated longest first) with room left for
// its prompt tokens. A token classifier reads the text's whitespace-separated words, each
// encoded as in training (Tokenizer::encode_words). Outputs by the head's task
// (HeadOutput): softmax probabilities, the regression values, per-label sigmoid
// probabilities, or per word the tag probabilities, with the head's label names (the
// workbench turns them into the ModelOutput that assertions/ judges, so runtime/ includes
// nothing above it). The evaluator borrows the
// models' weights and tokenizers; they must outlive the call. Not thread-safe (one
// SegmentedTransformer inside).
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "runtime/backend.h"
#include "runtime/metrics/classification_metrics.h"
#include "runtime/model/model_weights.h"
#include "runtime/model/transformer.h"
#include "runtime/text/tokenizer.h"

namespace scion::runtime {

// One head model to evaluate. Pointers are borrowed.
struct EvaluatedModel {
  const ModelWeights* weights = nullptr;  // resolved for inference (no gradients)
  const text::Tokenizer* tokenizer = nullptr;
  std::vector<std::string> labels;  // the head's output names, in output order
  float threshold = 0.5f;           // multi-label: a label is predicted at or above it
};

// One input: a text, or a sentence pair (the second text in `pair`).
struct ModelInput {
  std::string text;
  std::optional<std::string> pair;

  auto operator<=>(const ModelInput&) const = default;
};

// The words a token classifier reads in a text: its runs of non-whitespace.
std::vector<std::string> split_words(std::string_view text);

// What a head model said about one input (ClassifierWeights::task says which fields).
struct HeadOutput {
  spec::HeadTask task = spec::HeadTask::kClassification;
  std::vector<std::string> labels;   // the head's output names, in output order
  std::vector<float> probabilities;  // classification: softmax; multi-label: sigmoid per label
  std::vector<float> values;         // regression: one per output
  float threshold = 0.5f;            // multi-label
  // Token classification: the input's words and per word the softmax over the tags;
  // empty for a word truncation cut off.
  std::vector<std::string> words;
  std::vector<std::vector<float>> word_probabilities;
};

struct EvaluationOptions {
  // Most texts (classify) or (input, continuation) pairs (ContinuationScorer) per batch;
  // REQUIRES: > 0.
  int chunk_size = 64;
  // Most token rows one layer of a batch may hold (texts × positions × branches of the
  // trie at its widest layer): the chunk shrinks to stay under it. Activations of a few
  // thousand rows stay in the last-level cache between a product and the element-wise
  // work after it; a much wider batch runs at memory speed.
  std::int64_t max_rows = 8192;
  // Compute each layer application shared by several models once (the trie of layer
  // identities, FamilyBatch::share_identical). Off only to measure what it saves.
  bool share_identical = true;
};

class FamilyEvaluator {
 public:
  explicit FamilyEvaluator(Backend& backend) : backend_(backend), net_(backend) {}

  // outputs[m][t]: model m's output on inputs[t]. Errors: a model without a head or
  // whose label count differs from its head, a max_length too short for its prompt, and
  // the transformer's errors.
  Result<std::vector<std::vector<HeadOutput>>> classify(std::span<const EvaluatedModel> models,
                                                        std::span<const ModelInput> inputs,
                                                        const EvaluationOptions& options = {});
  // The same for single texts.
  Result<std::vector<std::vector<HeadOutput>>> classify(std::span<const EvaluatedModel> models,
                                                        std::span<const std::string> texts,
                                                        const EvaluationOptions& options = {});

 private:
  // Runs models[members] (one trunk) on every input, chunk by chunk, into outputs.
  Status classify_group(std::span<const EvaluatedModel> models,
                        const std::vector<std::size_t>& members, std::span<const ModelInput> inputs,
                        const EvaluationOptions& options,
                        std::vector<std::vector<HeadOutput>>& outputs);

  Backend& backend_;
  SegmentedTransformer net_;
};

// Tokens of one text that `model` reads: max_length minus its prompt tokens, [CLS] and
// [SEP]. classify() truncates a longer text from the end, so callers can tell the user.
std::size_t text_capacity(const EvaluatedModel& model);

// The tokens `model` is given for `input` before framing: the text's (a token
// classifier's: its words'), plus a pair's second text's. Compare with text_capacity()
// (a pair also frames with the tokenizer's extra middle specials).
std::size_t input_tokens(const EvaluatedModel& model, const ModelInput& input);

// log softmax(logits)[k], computed in double: a token's log-probability stays exact where
// its probability underflows a float. REQUIRES: k < logits.size().
double log_softmax(std::span<const float> logits, std::size_t k);

}  // namespace scion::runtime
