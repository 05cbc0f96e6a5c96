#include "assertions/model_output.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
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

std::vector<std::string> predicted_labels(const ModelOutput& output) {
  std::vector<std::string> labels;
  for (std::size_t i = 0; i < output.labels.size() && i < output.probabilities.size(); ++i)
    if (output.probabilities[i] >= output.threshold) labels.push_back(output.labels[i]);
  return labels;
}

std::vector<std::string> predicted_tags(const ModelOutput& output) {
  std::vector<std::string> tags;
  for (const std::vector<float>& p : output.word_probabilities) {
    if (p.empty()) {
      tags.emplace_back();
      continue;
    }
    const auto best = static_cast<std::size_t>(std::max_element(p.begin(), p.end()) - p.begin());
    tags.push_back(best < output.labels.size() ? output.labels[best] : std::to_string(best));
  }
  return tags;
}

std::optional<double> value_of(const ModelOutput& output, std::string_view label) {
  if (label.empty()) {
    if (output.values.empty()) return std::nullopt;
    return output.values.front();
  }
  for (std::size_t i = 0; i < output.labels.size() && i < output.values.size(); ++i)
    if (output.labels[i] == label) return output.values[i];
  return std::nullopt;
}

std::string prediction(const ModelOutput& output) {
  switch (output.task) {
    case spec::HeadTask::kMultiLabel: {
      const std::vector<std::string> labels = predicted_labels(output);
      return labels.empty() ? std::string("none") : fmt::format("{}", fmt::join(labels, "+"));
    }
    case spec::HeadTask::kTokenClassification:
      return fmt::format("{}", fmt::join(predicted_tags(output), " "));
    case spec::HeadTask::kRegression: {
      std::vector<std::string> values;
      for (float v : output.values) values.push_back(fmt::format("{:.3f}", v));
      return fmt::format("{}", fmt::join(values, ", "));
    }
    case spec::HeadTask::kClassification:
      break;
  }
  return predicted_label(output);
}

double confidence(const ModelOutput& output) {
  switch (output.task) {
    case spec::HeadTask::kMultiLabel: {
      double least = 1.0;
      for (float p : output.probabilities)
        least = std::min(least, static_cast<double>(std::max(p, 1.0f - p)));
      return output.probabilities.empty() ? 0.0 : least;
    }
    case spec::HeadTask::kTokenClassification: {
      double least = 1.0;
      bool any = false;
      for (const std::vector<float>& p : output.word_probabilities)
        if (!p.empty()) {
          least = std::min(least, static_cast<double>(*std::max_element(p.begin(), p.end())));
          any = true;
        }
      return any ? least : 0.0;
    }
    case spec::HeadTask::kRegression:
      return 0.0;
    case spec::HeadTask::kClassification:
      break;
  }
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
  for (std::size_t k = 0; k < output.values.size(); ++k)
    if (!std::isfinite(output.values[k]))
      return fmt::format("{} = {}", k < output.labels.size() ? output.labels[k] : std::to_string(k),
                         output.values[k]);
  for (const std::vector<float>& word : output.word_probabilities)
    for (float p : word)
      if (!std::isfinite(p)) return fmt::format("a tag probability = {}", p);
  for (const auto& [continuation, logprob] : output.continuation_logprobs)
    if (std::isnan(logprob) || logprob == std::numeric_limits<double>::infinity())
      return fmt::format("log p(\"{}\") = {}", continuation, logprob);
  return std::nullopt;
}

}  // namespace scion::assertions
