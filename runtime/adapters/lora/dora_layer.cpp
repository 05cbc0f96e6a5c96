#include "runtime/adapters/lora/dora_layer.h"

namespace scion::runtime {

void dora_weight_norms(Backend& be, float* norms, float* weight_scratch, const float* weight,
                       const LoraWeights& lw, int in, int out) {
  be.copy(weight_scratch, weight, static_cast<std::int64_t>(out) * in);
  // (out, in) += s · B (out, r) · A (r, in): the input-gradient form of a product.
  be.matmul_backward(weight_scratch, nullptr, nullptr, lw.b, nullptr, lw.a, lw.scale, out, in,
                     lw.rank, GradMode::kAccumulate);
  be.row_norms(norms, weight_scratch, out, in);
}

void dora_forward(Backend& be, float* out, float* combined, const float* x, const float* hidden,
                  const float* weight, const LoraWeights& lw, const float* norms, std::int64_t rows,
                  int in, int out_features) {
  be.matmul_forward(combined, x, weight, nullptr, rows, in, out_features);
  // PEFT adds (m/n − 1)·W·x̃ to the frozen output: its −W·x̃ here, m/n·W·x̃ below.
  be.add_inplace(out, combined, -1.0f, rows * out_features);
  be.matmul_forward_accumulate(combined, hidden, lw.b, lw.scale, rows, lw.rank, out_features);
  be.scale_columns(out, combined, lw.magnitude, norms, rows, out_features, true);
}

void dora_backward(Backend& be, float* dx, GradMode mode, float* dcombined, float* dhidden,
                   const float* dout, const float* x, const float* hidden, const float* combined,
                   const float* norms, const float* weight, const LoraWeights& lw,
                   std::int64_t rows, int in, int out_features) {
  if (!dx && !lw.da && !lw.db && !lw.dmagnitude) return;  // nothing below needs it
  // dT = dy ⊙ m / n; dm += Σ_rows dy ⊙ T / n (n constant).
  be.scale_columns_backward(dcombined, lw.dmagnitude, dout, combined, lw.magnitude, norms, rows,
                            out_features);
  // T = W·x̃ + s·B·h: the LoRA path from dT.
  be.matmul_backward(dhidden, lw.db, nullptr, dcombined, hidden, lw.b, lw.scale, rows, lw.rank,
                     out_features, GradMode::kAssign);
  be.matmul_backward(dx, lw.da, nullptr, dhidden, x, lw.a, 1.0f, rows, in, lw.rank, mode);
  if (!dx) return;
  // x̃ feeds W twice, through T and through −W·x̃: (dT − dy)·W.
  be.add_inplace(dcombined, dout, -1.0f, rows * out_features);
  be.matmul_backward(dx, nullptr, nullptr, dcombined, x, weight, 1.0f, rows, in, out_features,
                     GradMode::kAccumulate);
}

}  // namespace scion::runtime
