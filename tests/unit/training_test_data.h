// What the co-batched training tests share: a workspace holding a tiny frozen encoder
// ("base", 2 layers, width 16) and a labelled dataset ("reviews"), and 24 random byte rows
// with random labels to train on. Descendants are added by each test.
#pragma once

#include <algorithm>
#include <cmath>
#include <memory>
#include <random>
#include <vector>

#include "runtime/data/tokenized_dataset.h"
#include "runtime/text/byte_tokenizer.h"
#include "spec/workspace.h"

namespace scion::test {

inline constexpr int kByteVocab = 260;

inline spec::Workspace tiny_base_workspace() {
  spec::Workspace ws;
  spec::Dataset data;
  data.name = "reviews";
  data.labels = {"neg", "pos"};
  ws.datasets.push_back(data);
  spec::Model base;
  base.name = "base";
  spec::Architecture arch;
  arch.layers = 2;
  arch.width = 16;
  arch.heads = 2;
  arch.ffn_width = 32;
  arch.vocab_size = kByteVocab;
  arch.max_length = 16;
  base.architecture = arch;
  ws.models.push_back(base);
  return ws;
}

// A recipe that trains on "reviews" for `steps` AdamW steps of `batch` rows at `lr`.
inline spec::TrainingSpec reviews_recipe(std::uint64_t seed, float lr, int batch, int steps) {
  spec::TrainingSpec t;
  t.dataset = "reviews";
  t.steps = steps;
  t.batch_size = batch;
  t.seed = seed;
  t.optimizer.lr = lr;
  return t;
}

inline std::shared_ptr<const data::TokenizedDataset> synthetic_reviews() {
  auto data = std::make_shared<data::TokenizedDataset>();
  data->specials = text::ByteTokenizer().special_tokens();
  data->vocab_size = kByteVocab;
  std::mt19937 gen(7);
  for (int i = 0; i < 24; ++i) {
    std::vector<std::int32_t> row(3 + gen() % 9);
    for (auto& t : row) t = static_cast<std::int32_t>(gen() % 256);
    data->rows.push_back(row);
    data->labels.push_back(static_cast<std::int32_t>(gen() % 2));
  }
  return data;
}

// Largest |expected - actual| over the scale of `expected` (its largest magnitude, at least
// 1e-3). Co-batched and alone training sum row blocks of a product in another order, a few
// ulps apart; after a handful of Adam steps that stays far below 1e-4 of the scale.
inline float difference_to_scale(const std::vector<float>& expected, const std::vector<float>& actual) {
  float max_diff = 0, max_abs = 1e-3f;
  for (std::size_t i = 0; i < expected.size(); ++i) {
    max_diff = std::max(max_diff, std::fabs(expected[i] - actual[i]));
    max_abs = std::max(max_abs, std::fabs(expected[i]));
  }
  return max_diff / max_abs;
}

}  // namespace scion::test
