#include "runtime/adapters/ia3/ia3_fold.h"

namespace scion::runtime {

void fold_ia3(float* weight, float* bias, const float* scale, bool on_input, std::int64_t out,
              std::int64_t in) {
  for (std::int64_t o = 0; o < out; ++o)
    for (std::int64_t i = 0; i < in; ++i) weight[o * in + i] *= scale[on_input ? i : o];
  if (bias && !on_input)
    for (std::int64_t o = 0; o < out; ++o) bias[o] *= scale[o];
}

}  // namespace scion::runtime
