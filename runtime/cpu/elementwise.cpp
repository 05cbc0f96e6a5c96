#include "runtime/cpu/elementwise.h"

#include "runtime/cpu/parallel.h"
#include "runtime/op_types.h"

namespace scion::runtime::cpu {

void residual_forward(float* out, const float* inp1, const float* inp2, std::int64_t N) {
#pragma omp parallel for schedule(static) if (worth_parallel(N))
  for (std::int64_t i = 0; i < N; ++i) out[i] = inp1[i] + inp2[i];
}

void copy(float* dst, const float* src, std::int64_t N) {
#pragma omp parallel for schedule(static) if (worth_parallel(N))
  for (std::int64_t i = 0; i < N; ++i) dst[i] = src[i];
}

void add_inplace(float* dst, const float* src, float scale, std::int64_t N) {
#pragma omp parallel for schedule(static) if (worth_parallel(N))
  for (std::int64_t i = 0; i < N; ++i) dst[i] += scale * src[i];
}

void fill(float* dst, float value, std::int64_t N) {
#pragma omp parallel for schedule(static) if (worth_parallel(N))
  for (std::int64_t i = 0; i < N; ++i) dst[i] = value;
}

// Serial on purpose: the result must not depend on the thread count (determinism), and
// it runs once per optimizer step over the trainable parameters only.
double squared_norm(const float* x, std::int64_t N) {
  double sum = 0.0;
  for (std::int64_t i = 0; i < N; ++i) sum += static_cast<double>(x[i]) * x[i];
  return sum;
}

void scale_inplace(float* x, float scale, std::int64_t N) {
#pragma omp parallel for schedule(static) if (worth_parallel(N))
  for (std::int64_t i = 0; i < N; ++i) x[i] *= scale;
}

void clip_to_global_norm(float* x, std::int64_t N, const double* squared_norms, int count,
                         float max_norm) {
  const float norm = global_norm(squared_norms, count);
  if (norm > max_norm) scale_inplace(x, max_norm / (norm + kClipEpsilon), N);
}

}  // namespace scion::runtime::cpu
