// Softmax cross-entropy over N rows of V logits, for classification (N = batch, V =
// classes) and token-level language modelling (N = positions, V = vocabulary).
//
// Forward: losses[n] = -log softmax(logits[n])[targets[n]], or 0 when targets[n] ==
// ignore_index; probs (N, V) saved for backward. Returns the number of counted rows.
// Backward assigns dlogits (=) for the loss  scale · Σ_n losses[n]  (the model passes
// scale = 1 / counted rows for a mean); ignored rows get zero gradient.
#pragma once

#include <cstdint>

#include "runtime/op_types.h"

namespace scion::runtime::cpu {

std::int64_t cross_entropy_forward(float* losses, float* probs, const float* logits,
                                   const std::int32_t* targets, std::int64_t N, int V);

void cross_entropy_backward(float* dlogits, const float* probs, const std::int32_t* targets,
                            float scale, std::int64_t N, int V);

// The backward of the class-weighted loss  scale · Σ_n weights[targets[n]] · losses[n]
// (torch.nn.CrossEntropyLoss(weight=...) with scale = 1 / Σ_n weights[targets[n]]):
// row n's gradient is weights[targets[n]] times the unweighted one. weights: (V).
void cross_entropy_backward_weighted(float* dlogits, const float* probs,
                                     const std::int32_t* targets, const float* weights, float scale,
                                     std::int64_t N, int V);

}  // namespace scion::runtime::cpu
