// ModelOutput: what a model said about one input, as behavioural tests and model
// assertions see it. The evaluator fills it; nothing here depends on how models run.
//
// A classifier fills `labels` (its head's class names, in output order) and
// `probabilities` (softmax, same length). A language model fills
// `continuation_logprobs`: for each continuation a test asked about, the total
// log-likelihood of that continuation after the input, and `continuation_tokens`: how
// many tokens that total sums over (for per-token scores). A plain value; copy freely.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace scion::assertions {

struct ModelOutput {
  std::vector<std::string> labels;
  std::vector<float> probabilities;
  std::map<std::string, double> continuation_logprobs;
  std::map<std::string, std::size_t> continuation_tokens;

  bool is_classifier() const { return !probabilities.empty(); }
};

// Index of the most probable label (the first on ties); -1 when there are no classes.
int predicted_index(const ModelOutput& output);
// The predicted label's name; empty when there are no classes.
std::string predicted_label(const ModelOutput& output);
// Probability of the named label, or std::nullopt if the model has no such label.
std::optional<double> probability_of(const ModelOutput& output, std::string_view label);
// The highest probability.
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
