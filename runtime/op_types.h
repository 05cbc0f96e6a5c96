// The small types and constants that Backend operations (runtime/backend.h) take, shared
// by every backend and by the model code that calls them: no backend's headers are needed
// to name them.
//
// GradMode: whether a kernel assigns (=) or adds (+=) the gradient of an activation input.
// House convention: parameter gradients always accumulate, activation gradients are
// assigned. Kernels whose input activation may feed several consumers (a linear layer's
// input that also feeds q/k/v siblings or a LoRA branch, the residual stream into a layer
// norm) take a GradMode so the model can add the second consumer's gradient in place
// instead of through a temporary buffer.
//
// PoolMode: how sequence pooling makes one vector per sequence (the first real token, the
// mean of the real tokens, or the last real token).
//
// global_norm: the gradient-clipping norm from per-tensor sums of squares, the one
// arithmetic the optimizer (runtime/model/optimizer.h) and every backend's clip_to_global_norm
// use, so that the host's value and the backend's decision agree bit for bit.
#pragma once

#include <cmath>
#include <cstdint>

namespace scion::runtime {

enum class GradMode { kAssign, kAccumulate };

enum class PoolMode { kCls, kMean, kLast };

// A target that takes no loss (cross-entropy skips it), as PyTorch's ignore_index.
inline constexpr std::int32_t kIgnoreIndex = -100;

// The layer-norm epsilon of the built-in architectures; imported ones carry their own.
inline constexpr float kLayerNormEps = 1e-5f;

// sqrt(Σ squared_norms[i]), summed in index order in double, then rounded to float.
inline float global_norm(const double* squared_norms, int count) {
  double sum = 0.0;
  for (int i = 0; i < count; ++i) sum += squared_norms[i];
  return static_cast<float>(std::sqrt(sum));
}

// Clipping to max_norm scales by max_norm / (norm + kClipEpsilon) (torch's epsilon in
// clip_grad_norm_), when norm > max_norm.
inline constexpr float kClipEpsilon = 1e-6f;

}  // namespace scion::runtime
