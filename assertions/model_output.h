// ModelOutput: what a model said about one input, as behavioural tests and model
// assertions see it. The evaluator fills it; nothing here depends on how models run.
//
// A head model fills `task` and `labels` (its head's output names, in output order) and,
// by task: `probabilities` (a classifier's softmax; a multi-label head's sigmoid per label,
// with its `threshold`), `values` (a regression head's outputs), or `words` and
// `word_probabilities` (a token classifier's softmax over the tags per word; empty for a
// word truncation cut off). A language model fills
// `continuation_logprobs`: for each continuation a test asked about, the total
// log-likelihood of that continuation after the input, and `continuation_tokens`: how
// many tokens that total sums over (for per-token scores). A plain value; copy freely.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "spec/workspace.h"

namespace scion::assertions {

struct ModelOutput {
  std::vector<std::string> labels;
  std::vector<float> probabilities;
  std::map<std::string, double> continuation_logprobs;
  std::map<std::string, std::size_t> continuation_tokens;
  spec::HeadTask task = spec::HeadTask::kClassification;
  std::vector<float> values;
  float threshold = 0.5f;
  std::vector<std::string> words;
  std::vector<std::vector<float>> word_probabilities;

  // Any head model's output (the name predates the other tasks).
  bool is_classifier() const { return !probabilities.empty() || !values.empty() || !words.empty(); }
};

// A multi-label head's predicted labels: those at or above its threshold, in label order.
std::vector<std::string> predicted_labels(const ModelOutput& output);
// A token classifier's most probable tag per word ("" for a word cut off).
std::vector<std::string> predicted_tags(const ModelOutput& output);
// The value of a regression head's output `label` (its only one when empty); nullopt when
// it has none of that name.
std::optional<double> value_of(const ModelOutput& output, std::string_view label = {});

// The model's answer as one comparable string: a classifier's label, a multi-label
// head's predicted labels joined by '+' ("none" when none), a token classifier's tags
// joined by spaces, a regression head's values ("2.500", joined by ", ").
std::string prediction(const ModelOutput& output);

// Index of the most probable label (the first on ties); -1 when there are no classes.
int predicted_index(const ModelOutput& output);
// The predicted label's name; empty when there are no classes.
std::string predicted_label(const ModelOutput& output);
// Probability of the named label, or std::nullopt if the model has no such label.
std::optional<double> probability_of(const ModelOutput& output, std::string_view label);
// How sure the answer is: a classifier's highest probability; for a multi-label head the
// least sure of its yes/no decisions (min over labels of max(p, 1 − p)); for a token
// classifier the least sure word (min over words of its highest probability); 0 for a
// regression head, which has no probabilities.
double confidence(const ModelOutput& output);
// The highest probability minus the second highest (the highest itself with one class).
double margin(const ModelOutput& output);
// Shannon entropy of the probabilities in nats (0 log 0 = 0).
double entropy(const ModelOutput& output);
// The first value that is not a number a model could mean: a probability that is NaN or
// infinite, or a log-probability that is NaN or +infinity (a model whose parameters
// diverged), described for a message ("p(positive) = nan"); nullopt when all are sound.
// Comparisons with NaN are false, so every check must ask this first.
std::optional<std::string> non_finite_value(const ModelOutput& output);

}  // namespace scion::assertions
