#include "runtime/adapters/lora/lora_fold.h"

#include <cmath>

namespace scion::runtime {

void fold_lora(float* weight, const float* a, const float* b, const float* magnitude, float scale,
               std::int64_t out, std::int64_t in, std::int64_t rank) {
  for (std::int64_t o = 0; o < out; ++o) {
    float* row = weight + o * in;
    for (std::int64_t i = 0; i < in; ++i) {
      float delta = 0.0f;
      for (std::int64_t k = 0; k < rank; ++k) delta += b[o * rank + k] * a[k * in + i];
      row[i] += scale * delta;
    }
    if (!magnitude) continue;
    double squares = 0.0;
    for (std::int64_t i = 0; i < in; ++i) squares += static_cast<double>(row[i]) * row[i];
    const float factor = magnitude[o] / static_cast<float>(std::sqrt(squares));
    for (std::int64_t i = 0; i < in; ++i) row[i] *= factor;
  }
}

}  // namespace scion::runtime
