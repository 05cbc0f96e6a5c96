// Whether a kernel assigns (=) or adds (+=) the gradient of an activation input.
//
// House convention: parameter gradients always accumulate, activation gradients are
// assigned. Kernels whose input activation may feed several consumers (a linear layer's
// input that also feeds q/k/v siblings or a LoRA branch, the residual stream into a layer
// norm) take a GradMode so the model can add the second consumer's gradient in place
// instead of through a temporary buffer.
#pragma once

namespace scion::runtime::cpu {

enum class GradMode { kAssign, kAccumulate };

}  // namespace scion::runtime::cpu
