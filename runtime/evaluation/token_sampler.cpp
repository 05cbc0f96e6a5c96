#include "runtime/evaluation/token_sampler.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <vector>

#include "runtime/metrics/classification_metrics.h"

namespace scion::runtime {
namespace {

// Sets to -infinity every scaled logit below the k-th largest.
void keep_top_k(std::vector<double>& scaled, int k) {
  if (k <= 0 || static_cast<std::size_t>(k) >= scaled.size()) return;
  std::vector<double> sorted = scaled;
  std::nth_element(sorted.begin(), sorted.begin() + (k - 1), sorted.end(), std::greater<>());
  const double kth = sorted[static_cast<std::size_t>(k - 1)];
  for (double& x : scaled)
    if (x < kth) x = -std::numeric_limits<double>::infinity();
}

// Softmax of the scaled logits (0 where a logit is -infinity).
std::vector<double> probabilities(const std::vector<double>& scaled) {
  const double top = *std::max_element(scaled.begin(), scaled.end());
  std::vector<double> p(scaled.size());
  double sum = 0.0;
  for (std::size_t i = 0; i < scaled.size(); ++i) sum += p[i] = std::exp(scaled[i] - top);
  for (double& x : p) x /= sum;
  return p;
}

// Zeroes the tokens outside the nucleus: those whose more probable tokens already hold
// top_p of the mass. Ties are ordered by id, as a stable sort would.
void keep_top_p(std::vector<double>& p, double top_p) {
  if (top_p >= 1.0) return;
  std::vector<std::size_t> order(p.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&p](std::size_t a, std::size_t b) { return p[a] > p[b]; });
  double above = 0.0;  // the mass of the tokens before this one
  for (std::size_t i = 0; i < order.size(); ++i) {
    const double mass = p[order[i]];
    if (i > 0 && above >= top_p) p[order[i]] = 0.0;
    above += mass;
  }
}

}  // namespace

Status check_sampling(const SamplingOptions& options) {
  if (!std::isfinite(options.temperature) || options.temperature < 0.0f)
    return invalid_argument(fmt::format(
        "the temperature is {}; give 0 for greedy decoding or a positive number to sample",
        options.temperature));
  if (options.top_k < 0)
    return invalid_argument(
        fmt::format("top-k is {}; give 0 (every token) or a positive count", options.top_k));
  if (!(options.top_p > 0.0f && options.top_p <= 1.0f))
    return invalid_argument(
        fmt::format("top-p is {}; give a probability mass in (0, 1]", options.top_p));
  return Status::ok();
}

std::int32_t pick_token(std::span<const float> logits, const SamplingOptions& options,
                        base::SeededRng& rng) {
  // argmax keeps the first of equal maxima, as torch.argmax does.
  if (options.temperature == 0.0f) return argmax(logits);
  std::vector<double> scaled(logits.size());
  for (std::size_t i = 0; i < logits.size(); ++i)
    scaled[i] = static_cast<double>(logits[i]) / options.temperature;
  keep_top_k(scaled, options.top_k);
  std::vector<double> p = probabilities(scaled);
  keep_top_p(p, options.top_p);
  const double total = std::accumulate(p.begin(), p.end(), 0.0);
  const double u = rng.uniform01() * total;
  double cumulative = 0.0;
  std::int32_t last_kept = 0;
  for (std::size_t i = 0; i < p.size(); ++i) {
    if (p[i] <= 0.0) continue;
    cumulative += p[i];
    last_kept = static_cast<std::int32_t>(i);
    if (u < cumulative) return last_kept;
  }
  return last_kept;  // rounding left u at the very top: the last token that stayed
}

}  // namespace scion::runtime
