// What the co-batched training tests share: a workspace holding a tiny frozen encoder
// ("base", 2 layers, width 16) and a labelled dataset ("reviews"), and 24 random byte rows
// with random labels to train on. Descendants are added by each test.
#pragma once

#include <memory>
#include <random>

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

}  // namespace scion::test
