#include "assertions/model_output.h"

#include <cmath>

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

}  // namespace scion::assertions
