#include "runtime/model/text_positions.h"

#include <algorithm>

#include "spec/text_positions.h"

namespace scion::runtime {

int position_shift(const ModelWeights& w) {
  if (!spec::prefix_shifts_positions(w.arch)) return 0;
  int most = 0;
  for (int l = 0; l < static_cast<int>(w.blocks.size()); ++l)
    most = std::max(most, w.prefix_tokens(l));
  return most;
}

int positions_before_text(const ModelWeights& w) { return w.prompt_tokens() + position_shift(w); }

}  // namespace scion::runtime
