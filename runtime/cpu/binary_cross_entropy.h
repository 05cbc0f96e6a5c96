// Binary cross-entropy with logits over N rows of K independent labels: the multi-label
// head's loss (torch.nn.BCEWithLogitsLoss's terms), one sigmoid per label.
//
// Forward: probs[n, k] = sigmoid(logits[n, k]) saved for backward, and
// losses[n] = Σ_k max(z, 0) − z·y + log(1 + exp(−|z|)) with z = logits[n, k], y =
// targets[n, k] ∈ [0, 1]: −y log σ(z) − (1 − y) log(1 − σ(z)) in a form that neither
// overflows nor loses the small probabilities. Backward assigns dlogits (=) for the loss
// scale · Σ_n losses[n]: scale · (probs − targets) (the model passes scale = 1 / (N·K)
// for torch's mean).
#pragma once

#include <cstdint>

namespace scion::runtime::cpu {

void bce_with_logits_forward(float* losses, float* probs, const float* logits, const float* targets,
                             std::int64_t N, int K);

void bce_with_logits_backward(float* dlogits, const float* probs, const float* targets, float scale,
                              std::int64_t N, int K);

}  // namespace scion::runtime::cpu
