// A bottleneck adapter (Houlsby et al.; spec::BottleneckSpec) on one row range of a
// co-batched pass: after a block's attention or feed-forward output y, its residual
// receives up(gelu(down(y))):
//
//   pre = y · downᵀ + b_down      (rows, H)
//   act = gelu(pre)               (rows, H)
//   res += act · upᵀ + b_up       (rows, C)
//
// BottleneckAdaptation (bottleneck_method.cpp) calls these at its block site for the passes
// (runtime/model/forward_pass.cpp, backward_pass.cpp); pre and act are the activations it
// asked the batch plan for, kept for the backward. Parameter gradients accumulate (+=), as
// every Backend op's do, and so does dy, onto the gradient the block's own path gave y.
// Every buffer is backend memory.
#pragma once

#include <cstdint>

#include "runtime/backend.h"
#include "runtime/model/model_weights.h"

namespace scion::runtime {

// One adapter's projections, bound from its parameters (bottleneck_parameters.h).
struct BottleneckWeights {
  LinearWeights down;  // C -> H
  LinearWeights up;    // H -> C
};

// The activations one adapter keeps between its forward and backward (rows, H) each.
struct BottleneckActivations {
  float* pre = nullptr;  // before GELU
  float* act = nullptr;  // after
};

// res (rows, C) += up(gelu(down(y))); `delta` (rows, C) is scratch for the adapter's output.
void bottleneck_forward(Backend& be, const BottleneckWeights& w, const BottleneckActivations& acts,
                        const float* y, float* delta, float* res, std::int64_t rows, int C);

// Given dres (rows, C), the gradient of the residual the adapter added to: dy (rows, C) +=
// the adapter path's gradient of its input y, and the adapter's weight gradients are
// written. `dact` and `dpre` (rows, H) are scratch.
void bottleneck_backward(Backend& be, const BottleneckWeights& w, const BottleneckActivations& acts,
                         const float* y, const float* dres, float* dy, float* dact, float* dpre,
                         std::int64_t rows, int C);

}  // namespace scion::runtime
