#include "runtime/cpu/softmax.h"

#include <algorithm>
#include <cmath>

#include "runtime/cpu/fast_exp.h"
#include "runtime/cpu/parallel.h"

namespace scion::runtime::cpu {

SCION_SIMD_CLONES void softmax_row(float* p, int visible, int S) {
  for (int j = visible; j < S; ++j) p[j] = 0.0f;
  if (visible == 0) return;  // no key at all: a zero output
  float maxval = -INFINITY;
  for (int j = 0; j < visible; ++j) maxval = std::max(maxval, p[j]);
  float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
  for (int j = 0; j < visible; ++j) {
    p[j] = fast_exp(p[j] - maxval);
    sum += p[j];
  }
  const float inv = 1.0f / sum;
  for (int j = 0; j < visible; ++j) p[j] *= inv;
}

}  // namespace scion::runtime::cpu
