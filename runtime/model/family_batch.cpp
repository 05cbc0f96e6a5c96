#include "runtime/model/family_batch.h"

#include "runtime/model/kv_cache.h"

namespace scion::runtime {

int prompt_rows(const Segment& seg) {
  return seg.cache && seg.cache->cached() > 0 ? 0 : seg.model->prompt_tokens();
}

int keys_before(const Segment& seg, int block) {
  return seg.cache ? seg.cache->rows(block) : seg.model->prefix_tokens(block);
}

int first_position(const Segment& seg) { return seg.cache ? seg.cache->cached() : 0; }

}  // namespace scion::runtime
