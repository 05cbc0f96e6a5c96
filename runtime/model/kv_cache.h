// KvCache: the keys and values one sequence of one causal model has produced so far, block
// by block, so that incremental decoding runs each new token through the model once
// instead of the whole text again (runtime/model/transformer.h: Segment::cache).
//
// Block l's keys and values are (prefix_tokens(l) + capacity, C) rows of backend memory:
// first the model's prefix-tuning virtual tokens (copied in at creation: transformers
// holds them as past_key_values the same way), then one row per position the model has
// run, prompt-tuning virtual tokens included. Keys are stored after rotary positions
// and, with grouped-query attention, widened to every query head: attention reads them
// as they are. A forward over a segment with a cache attends to the cached rows as to a
// prefix, writes its own rows after them and then advances the cache: the next forward
// continues at position cached(), which shifts learned and rotary positions alike.
//
// One cache serves one model and one sequence (Segment::batch 1). It owns its memory
// (an Arena of the backend that runs the model); the model's weights must outlive it.
// Not thread-safe.
#pragma once

#include <vector>

#include "base/status.h"
#include "runtime/arena.h"
#include "runtime/backend.h"
#include "runtime/model/model_weights.h"

namespace scion::runtime {

class KvCache {
 public:
  // Room for `capacity` positions after the model's prefix rows (its prompt tokens and
  // the text). Errors: capacity < 1 (kInvalidArgument), the arena's kOutOfMemory.
  static Result<KvCache> create(Backend& backend, const ModelWeights& model, int capacity);

  const ModelWeights& model() const { return *model_; }
  int capacity() const { return capacity_; }
  // Positions already run (prompt tokens included; prefix rows not).
  int cached() const { return cached_; }
  int prefix_rows(int block) const { return prefix_rows_[static_cast<std::size_t>(block)]; }
  // Rows block `block` holds now: its prefix rows and the cached positions.
  int rows(int block) const { return prefix_rows(block) + cached_; }

  // (prefix_rows(block) + capacity(), C) backend memory.
  float* keys(int block) const { return keys_[static_cast<std::size_t>(block)]; }
  float* values(int block) const { return values_[static_cast<std::size_t>(block)]; }

  // After a forward wrote `positions` more rows into every block.
  // REQUIRES: cached() + positions <= capacity().
  void advance(int positions) { cached_ += positions; }

 private:
  KvCache() = default;

  const ModelWeights* model_ = nullptr;
  Arena arena_;
  int capacity_ = 0;
  int cached_ = 0;
  std::vector<int> prefix_rows_;
  std::vector<float*> keys_, values_;
};

}  // namespace scion::runtime
