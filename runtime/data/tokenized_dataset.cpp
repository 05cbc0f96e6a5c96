#include "runtime/data/tokenized_dataset.h"

#include <algorithm>
#include <cassert>

namespace scion::data {
namespace {

TokenizedDataset empty_for(const text::Tokenizer& tokenizer) {
  TokenizedDataset data;
  data.specials = tokenizer.special_tokens();
  data.vocab_size = tokenizer.vocab_size();
  return data;
}

}  // namespace

TokenizedDataset tokenize_examples(const ExampleSet& examples, const text::Tokenizer& tokenizer,
                                   int labels) {
  TokenizedDataset data = empty_for(tokenizer);
  data.label_type = examples.label_type;
  data.has_labels = examples.labelled;
  if (examples.pairs) data.pair_framing = tokenizer.pair_framing();
  data.rows.reserve(examples.examples.size());
  const bool tagged = examples.labelled && examples.label_type == spec::LabelType::kTags;
  for (const Example& example : examples.examples) {
    if (tagged) {
      std::vector<std::int32_t> ids, starts;
      tokenizer.encode_words(example.words, ids, starts);
      data.rows.push_back(std::move(ids));
      data.word_starts.push_back(std::move(starts));
      data.tags.push_back(example.tags);
    } else {
      data.rows.push_back(tokenizer.encode(example.text));
    }
    if (examples.pairs) data.pair_rows.push_back(tokenizer.encode(example.text_pair));
    if (examples.completions) {
      std::vector<std::int32_t>& row = data.rows.back();
      data.prompt_lengths.push_back(static_cast<std::int32_t>(row.size()));
      const std::vector<std::int32_t> completion = tokenizer.encode(example.completion);
      row.insert(row.end(), completion.begin(), completion.end());
    }
    if (!examples.labelled) continue;
    switch (examples.label_type) {
      case spec::LabelType::kSingle:
        data.labels.push_back(example.label);
        break;
      case spec::LabelType::kMulti: {
        std::vector<float> hot(static_cast<std::size_t>(labels), 0.0f);
        for (std::int32_t k : example.label_set)
          if (k < labels) hot[static_cast<std::size_t>(k)] = 1.0f;
        data.targets.push_back(std::move(hot));
        break;
      }
      case spec::LabelType::kNumber:
        data.targets.push_back(example.values);
        break;
      case spec::LabelType::kTags:
        break;
    }
  }
  return data;
}

TokenizedDataset tokenize_corpus(std::string_view corpus, const text::Tokenizer& tokenizer,
                                 int window) {
  assert(window > 0);
  TokenizedDataset data = empty_for(tokenizer);
  const std::vector<std::int32_t> ids = tokenizer.encode(corpus);
  const auto step = static_cast<std::size_t>(window);
  for (std::size_t start = 0; start < ids.size(); start += step) {
    const std::size_t end = std::min(ids.size(), start + step);
    data.rows.emplace_back(ids.begin() + static_cast<std::ptrdiff_t>(start),
                           ids.begin() + static_cast<std::ptrdiff_t>(end));
  }
  return data;
}

int content_capacity(bool causal_lm, int max_length) {
  return causal_lm ? max_length - 1 : max_length - 2;
}

}  // namespace scion::data
