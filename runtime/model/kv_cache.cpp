#include "runtime/model/kv_cache.h"

#include <string>

namespace scion::runtime {

Result<KvCache> KvCache::create(Backend& backend, const ModelWeights& model, int capacity) {
  if (capacity < 1)
    return invalid_argument("a key/value cache needs room for at least one position");
  const std::int64_t C = model.arch.width;
  const int L = model.arch.layers;
  KvCache cache;
  cache.model_ = &model;
  cache.capacity_ = capacity;
  std::vector<ViewSpec> table;
  for (int l = 0; l < L; ++l) {
    cache.prefix_rows_.push_back(model.prefix_tokens(l));
    const std::int64_t rows = model.prefix_tokens(l) + capacity;
    table.push_back({"blk." + std::to_string(l) + ".k", {rows, C}});
    table.push_back({"blk." + std::to_string(l) + ".v", {rows, C}});
  }
  auto arena = Arena::create(table, backend, "the key/value cache of '" + model.name + "'");
  if (!arena) return arena.status();
  cache.arena_ = std::move(*arena);
  for (int l = 0; l < L; ++l) {
    float* k = cache.arena_.view("blk." + std::to_string(l) + ".k").f32();
    float* v = cache.arena_.view("blk." + std::to_string(l) + ".v").f32();
    cache.keys_.push_back(k);
    cache.values_.push_back(v);
    // The prefixes of the model's ancestors first, as the transformer concatenates them.
    std::int64_t row = 0;
    for (const PrefixWeights& p : model.blocks[static_cast<std::size_t>(l)].prefixes) {
      backend.copy(k + row * C, p.keys, static_cast<std::int64_t>(p.tokens) * C);
      backend.copy(v + row * C, p.values, static_cast<std::int64_t>(p.tokens) * C);
      row += p.tokens;
    }
  }
  return cache;
}

}  // namespace scion::runtime
