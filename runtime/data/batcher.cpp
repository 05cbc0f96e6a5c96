#include "runtime/data/batcher.h"

#include <algorithm>
#include <cassert>

namespace scion::data {
namespace {

using Sequence = std::vector<std::int32_t>;

// [open] content[:capacity] [close]
Sequence frame(const Sequence& content, std::int32_t open, std::int32_t close, int capacity) {
  const std::size_t kept = std::min(content.size(), static_cast<std::size_t>(capacity));
  Sequence framed;
  framed.reserve(kept + 2);
  framed.push_back(open);
  framed.insert(framed.end(), content.begin(), content.begin() + static_cast<std::ptrdiff_t>(kept));
  framed.push_back(close);
  return framed;
}

const Sequence& row_of(const TokenizedDataset& data, std::int64_t row) {
  assert(row >= 0 && row < data.row_count());
  return data.rows[static_cast<std::size_t>(row)];
}

// Pads `inputs` (and `targets` and `types`, when given) into a batch; fills tokens, mask,
// lengths, rows.
Batch pad(const std::vector<Sequence>& inputs, const std::vector<Sequence>* targets,
          std::span<const std::int64_t> rows, const TokenizedDataset& data,
          const PaddingOptions& padding, const std::vector<Sequence>* types = nullptr) {
  Batch batch;
  batch.batch_size = static_cast<int>(inputs.size());
  std::size_t longest = 0;
  for (const Sequence& s : inputs) longest = std::max(longest, s.size());
  batch.length = padding.pad_to_max_length ? padding.max_length : static_cast<int>(longest);
  const auto T = static_cast<std::size_t>(batch.length);
  batch.tokens.assign(inputs.size() * T, data.specials.pad);
  batch.attention_mask.assign(inputs.size() * T, 0);
  if (targets) batch.targets.assign(inputs.size() * T, kIgnoreIndex);
  if (types) batch.token_types.assign(inputs.size() * T, 0);
  for (std::size_t b = 0; b < inputs.size(); ++b) {
    const Sequence& in = inputs[b];
    std::copy(in.begin(), in.end(), batch.tokens.begin() + static_cast<std::ptrdiff_t>(b * T));
    std::fill_n(batch.attention_mask.begin() + static_cast<std::ptrdiff_t>(b * T), in.size(), 1);
    if (targets) {
      const Sequence& out = (*targets)[b];
      std::copy(out.begin(), out.end(), batch.targets.begin() + static_cast<std::ptrdiff_t>(b * T));
    }
    if (types) {
      const Sequence& t = (*types)[b];
      std::copy(t.begin(), t.end(), batch.token_types.begin() + static_cast<std::ptrdiff_t>(b * T));
    }
    batch.lengths.push_back(static_cast<std::int32_t>(in.size()));
  }
  batch.rows.assign(rows.begin(), rows.end());
  return batch;
}

std::int32_t random_normal_token(const TokenizedDataset& data, base::SeededRng& rng) {
  for (;;) {
    const auto id =
        static_cast<std::int32_t>(rng.below(static_cast<std::uint64_t>(data.vocab_size)));
    if (!data.specials.is_special(id)) return id;
  }
}

// Masks the content positions 1..size-2 of `tokens` in place; returns the targets.
Sequence mask_row(Sequence& tokens, const TokenizedDataset& data, float probability,
                  base::SeededRng& rng) {
  Sequence targets(tokens.size(), kIgnoreIndex);
  if (tokens.size() <= 2) return targets;
  std::vector<std::size_t> chosen;
  for (std::size_t pos = 1; pos + 1 < tokens.size(); ++pos)
    if (rng.uniform01() < probability) chosen.push_back(pos);
  if (chosen.empty()) chosen.push_back(1 + static_cast<std::size_t>(rng.below(tokens.size() - 2)));
  for (std::size_t pos : chosen) {
    targets[pos] = tokens[pos];
    const double r = rng.uniform01();
    if (r < 0.8)
      tokens[pos] = data.specials.mask;
    else if (r < 0.9)
      tokens[pos] = random_normal_token(data, rng);
  }
  return targets;
}

}  // namespace

std::pair<std::size_t, std::size_t> truncate_pair(std::size_t first, std::size_t second,
                                                  std::size_t room) {
  if (first + second <= room) return {first, second};
  // tokenizers' LongestFirst: n1 the shorter, n2 the longer.
  const bool swapped = first > second;
  std::size_t n1 = swapped ? second : first;
  std::size_t n2 = n1 > room ? n1 : std::max(n1, room - n1);
  if (n1 + n2 > room) {
    n1 = room / 2;
    n2 = n1 + room % 2;
  }
  if (swapped) std::swap(n1, n2);
  return {std::min(first, n1), std::min(second, n2)};
}

namespace {

// A pair framed as its tokenizer frames one, and its token types.
void frame_pair(const Sequence& a, const Sequence& b, const text::PairFraming& f, int max_length,
                Sequence& framed, Sequence& types) {
  const std::size_t room = static_cast<std::size_t>(
      std::max<std::int64_t>(0, max_length - static_cast<std::int64_t>(f.specials())));
  const auto [na, nb] = truncate_pair(a.size(), b.size(), room);
  framed = f.open;
  framed.insert(framed.end(), a.begin(), a.begin() + static_cast<std::ptrdiff_t>(na));
  framed.insert(framed.end(), f.middle.begin(), f.middle.end());
  types.assign(framed.size(), 0);
  framed.insert(framed.end(), b.begin(), b.begin() + static_cast<std::ptrdiff_t>(nb));
  framed.insert(framed.end(), f.close.begin(), f.close.end());
  types.resize(framed.size(), f.second_type);
}

// Each kept word's tag at its first sub-word's position in the framed row ([CLS] first).
Sequence word_targets(const TokenizedDataset& data, std::int64_t row, std::size_t framed_size) {
  Sequence targets(framed_size, kIgnoreIndex);
  const auto r = static_cast<std::size_t>(row);
  const std::vector<std::int32_t>& starts = data.word_starts[r];
  for (std::size_t w = 0; w < starts.size(); ++w) {
    const std::size_t position = 1 + static_cast<std::size_t>(starts[w]);
    if (position + 1 < framed_size) targets[position] = data.tags[r][w];  // not cut off
  }
  return targets;
}

}  // namespace

Batch make_classification_batch(const TokenizedDataset& data, std::span<const std::int64_t> rows,
                                const PaddingOptions& padding) {
  std::vector<Sequence> inputs, types, targets;
  const int capacity = content_capacity(false, padding.max_length);
  const bool tagged = data.labelled() && data.label_type == spec::LabelType::kTags;
  for (std::int64_t row : rows) {
    if (data.pairs()) {
      inputs.emplace_back();
      types.emplace_back();
      frame_pair(row_of(data, row), data.pair_rows[static_cast<std::size_t>(row)],
                 data.pair_framing, padding.max_length, inputs.back(), types.back());
    } else {
      inputs.push_back(frame(row_of(data, row), data.specials.cls, data.specials.sep, capacity));
    }
    if (tagged) targets.push_back(word_targets(data, row, inputs.back().size()));
  }
  Batch batch = pad(inputs, tagged ? &targets : nullptr, rows, data, padding,
                    data.pairs() ? &types : nullptr);
  if (!data.labelled()) return batch;
  if (data.label_type == spec::LabelType::kSingle) {
    for (std::int64_t row : rows)
      batch.labels.push_back(data.labels[static_cast<std::size_t>(row)]);
  } else if (data.label_type != spec::LabelType::kTags) {
    batch.value_width = data.target_width();
    for (std::int64_t row : rows) {
      const std::vector<float>& v = data.targets[static_cast<std::size_t>(row)];
      batch.values.insert(batch.values.end(), v.begin(), v.end());
    }
  }
  return batch;
}

Batch make_masked_lm_batch(const TokenizedDataset& data, std::span<const std::int64_t> rows,
                           const PaddingOptions& padding, float mask_probability, base::SeededRng& rng) {
  assert(data.specials.mask != text::kNoToken);
  assert(mask_probability > 0.0f && mask_probability <= 1.0f);
  std::vector<Sequence> inputs, targets;
  const int capacity = content_capacity(false, padding.max_length);
  for (std::int64_t row : rows) {
    inputs.push_back(frame(row_of(data, row), data.specials.cls, data.specials.sep, capacity));
    targets.push_back(mask_row(inputs.back(), data, mask_probability, rng));
  }
  return pad(inputs, &targets, rows, data, padding);
}

Batch make_causal_lm_batch(const TokenizedDataset& data, std::span<const std::int64_t> rows,
                           const PaddingOptions& padding) {
  std::vector<Sequence> inputs, targets;
  const int capacity = content_capacity(true, padding.max_length);
  for (std::int64_t row : rows) {
    const Sequence& content = row_of(data, row);
    std::size_t prompt =
        data.prompt_lengths.empty()
            ? 0
            : static_cast<std::size_t>(data.prompt_lengths[static_cast<std::size_t>(row)]);
    // Too long: the prompt's first tokens go first.
    const std::size_t excess = content.size() - std::min(content.size(), std::size_t(capacity));
    const std::size_t dropped = std::min(prompt, excess);
    prompt -= dropped;
    const Sequence kept(content.begin() + static_cast<std::ptrdiff_t>(dropped), content.end());
    const Sequence full = frame(kept, data.specials.cls, data.specials.sep, capacity);
    inputs.emplace_back(full.begin(), full.end() - 1);
    targets.emplace_back(full.begin() + 1, full.end());
    // Target j is content token j: the prompt's take no loss.
    const std::size_t masked = std::min(prompt, targets.back().size());
    std::fill_n(targets.back().begin(), masked, kIgnoreIndex);
  }
  return pad(inputs, &targets, rows, data, padding);
}

}  // namespace scion::data
