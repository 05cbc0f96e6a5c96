#include "assertions/model_output.h"

#include <fmt/format.h>

#include <cmath>
#include <limits>

namespace scion::assertions {

int predicted_index(const ModelOutput& output) {
  int best = -1;
  for (std::size_t i = 0; i < output.probabilities.size(); ++i)
    if (best < 0 || output.probabilities[i] > output.probabilities[static_cast<std::size_t>(best)])
      best = static_cast<int>(i);
  return best;
}

std::string predicted_label(const ModelOutput& output) {
  const int i = predicted_index(output);
  if (i < 0 || static_cast<std::size_t>(i) >= output.labels.size()) return {};
  return output.labels[static_cast<std::size_t>(i)];
}

std::optional<double> probability_of(const ModelOutput& output, std::string_view label) {
  for (std::size_t i = 0; i < output.labels.size() && i < output.probabilities.size(); ++i)
    if (output.labels[i] == label) return output.probabilities[i];
  return std::nullopt;
}

double confidence(const ModelOutput& output) {
  const int i = predicted_index(output);
  return i < 0 ? 0.0 : output.probabilities[static_cast<std::size_t>(i)];
}

double margin(const ModelOutput& output) {
  double first = 0.0, second = 0.0;
  for (float p : output.probabilities) {
    if (p > first) {
      second = first;
      first = p;
    } else if (p > second) {
      second = p;
    }
  }
  return first - second;
}

double entropy(const ModelOutput& output) {
  double h = 0.0;
  for (float p : output.probabilities)
    if (p > 0.0f) h -= static_cast<double>(p) * std::log(static_cast<double>(p));
  return h;
}

std::optional<std::string> non_finite_value(const ModelOutput& output) {
  for (std::size_t k = 0; k < output.probabilities.size(); ++k)
    if (!std::isfinite(output.probabilities[k]))
      return fmt::format("p({}) = {}", k < output.labels.size() ? output.labels[k] : std::to_string(k),
                         output.probabilities[k]);
  for (const auto& [continuation, logprob] : output.continuation_logprobs)
    if (std::isnan(logprob) || logprob == std::numeric_limits<double>::infinity())
      return fmt::format("log p(\"{}\") = {}", continuation, logprob);
  return std::nullopt;
}

}  // namespace scion::assertions
