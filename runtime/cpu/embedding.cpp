#include "runtime/cpu/embedding.h"

#include <cstddef>

#include "runtime/cpu/parallel.h"

namespace scion::runtime::cpu {

void embedding_forward(float* out, const std::int32_t* inp, const float* wte, const float* wpe,
                       const float* prompt, int B, int T, int P, int C) {
  const int S = P + T;
#pragma omp parallel for collapse(2) schedule(static) if (worth_parallel(std::int64_t{B} * S * C))
  for (int b = 0; b < B; ++b) {
    for (int s = 0; s < S; ++s) {
      float* o = out + (static_cast<std::size_t>(b) * S + s) * C;
      const float* src = s < P ? prompt + static_cast<std::size_t>(s) * C
                               : wte + static_cast<std::size_t>(inp[b * T + (s - P)]) * C;
      if (!wpe) {  // rotary positions: nothing is added here
        for (int c = 0; c < C; ++c) o[c] = src[c];
        continue;
      }
      const float* pos = wpe + static_cast<std::size_t>(s) * C;
      for (int c = 0; c < C; ++c) o[c] = src[c] + pos[c];
    }
  }
}

// Parallel over channels, serial over rows: each thread owns a slice of every embedding
// row, so repeated tokens never race and the summation order is fixed (deterministic).
void embedding_backward(float* dwte, float* dwpe, float* dprompt, const float* dout,
                        const std::int32_t* inp, int B, int T, int P, int C) {
  const int S = P + T;
  if (dprompt)
    for (std::size_t i = 0; i < static_cast<std::size_t>(P) * C; ++i) dprompt[i] = 0.0f;
#pragma omp parallel for schedule(static) if (worth_parallel(std::int64_t{B} * S * C))
  for (int c = 0; c < C; ++c) {
    for (int b = 0; b < B; ++b) {
      for (int s = 0; s < S; ++s) {
        const float g = dout[(static_cast<std::size_t>(b) * S + s) * C + c];
        if (dwpe) dwpe[static_cast<std::size_t>(s) * C + c] += g;
        if (s < P) {
          if (dprompt) dprompt[static_cast<std::size_t>(s) * C + c] += g;
        } else if (dwte) {
          dwte[static_cast<std::size_t>(inp[b * T + (s - P)]) * C + c] += g;
        }
      }
    }
  }
}

}  // namespace scion::runtime::cpu
