#include "runtime/data/training_data.h"

#include <cassert>

namespace scion::data {

Result<std::shared_ptr<const TokenizedDataset>> load_tokenized_dataset(
    const spec::Dataset& dataset, const text::Tokenizer& tokenizer, spec::Objective objective,
    int max_length) {
  assert(max_length >= 3);
  const bool causal = objective == spec::Objective::kCausalLm;
  const bool language_model = causal || objective == spec::Objective::kMaskedLm;
  if (dataset.format == spec::DatasetFormat::kText && language_model) {
    auto corpus = read_corpus(dataset.path);
    if (!corpus) return corpus.status();
    return std::make_shared<const TokenizedDataset>(
        tokenize_corpus(*corpus, tokenizer, content_capacity(causal, max_length)));
  }
  auto examples = read_dataset(dataset);
  if (!examples) return examples.status();
  return std::make_shared<const TokenizedDataset>(
      tokenize_examples(*examples, tokenizer, static_cast<int>(dataset.labels.size())));
}

}  // namespace scion::data
