#include "runtime/adapters/lora/lora_layer.h"

#include "runtime/adapters/lora/dora_layer.h"

namespace scion::runtime {

void lora_forward(Backend& be, float* out, const LoraActivations& act, const LoraScratch& scratch,
                  const float* x, const float* weight, const LoraWeights& lw,
                  const LoraDropout& dropout, std::int64_t rows, int in, int out_features) {
  if (act.dropped) {
    be.dropout_forward(act.dropped, act.mask, x, rows * in, lw.dropout, dropout.seed,
                       dropout.stream, dropout.first_element);
    x = act.dropped;
  }
  be.matmul_forward(act.hidden, x, lw.a, nullptr, rows, in, lw.rank);
  if (lw.magnitude) {
    dora_weight_norms(be, act.norms, scratch.dora_weight, weight, lw, in, out_features);
    dora_forward(be, out, act.combined, x, act.hidden, weight, lw, act.norms, rows, in,
                 out_features);
    return;
  }
  be.matmul_forward_accumulate(out, act.hidden, lw.b, lw.scale, rows, lw.rank, out_features);
}

namespace {

// DoRA's share: its gradients, and dx (+=) through its dropout when it has one.
void dora_backward_rows(Backend& be, float* dx, const LoraActivations& act,
                        const LoraScratch& scratch, const float* dout, const float* x,
                        const float* weight, const LoraWeights& lw, std::int64_t rows, int in,
                        int out_features) {
  const float* input = act.dropped ? act.dropped : x;
  float* dx_lora = act.dropped && dx ? scratch.dinput : dx;
  dora_backward(be, dx_lora, act.dropped ? GradMode::kAssign : GradMode::kAccumulate,
                scratch.dcombined, scratch.dhidden, dout, input, act.hidden, act.combined,
                act.norms, weight, lw, rows, in, out_features);
  if (!act.dropped || !dx) return;
  be.dropout_backward(scratch.dinput, scratch.dinput, act.mask, rows * in);
  be.add_inplace(dx, scratch.dinput, 1.0f, rows * in);
}

}  // namespace

void lora_backward(Backend& be, float* dx, const LoraActivations& act, const LoraScratch& scratch,
                   const float* dout, const float* x, const float* weight, const LoraWeights& lw,
                   std::int64_t rows, int in, int out_features) {
  if (lw.magnitude) {
    dora_backward_rows(be, dx, act, scratch, dout, x, weight, lw, rows, in, out_features);
    return;
  }
  be.matmul_backward(scratch.dhidden, lw.db, nullptr, dout, act.hidden, lw.b, lw.scale, rows,
                     lw.rank, out_features, GradMode::kAssign);
  if (act.dropped) {
    be.matmul_backward(dx ? scratch.dinput : nullptr, lw.da, nullptr, scratch.dhidden, act.dropped,
                       lw.a, 1.0f, rows, in, lw.rank, GradMode::kAssign);
    if (dx) {
      be.dropout_backward(scratch.dinput, scratch.dinput, act.mask, rows * in);
      be.add_inplace(dx, scratch.dinput, 1.0f, rows * in);
    }
  } else {
    be.matmul_backward(dx, lw.da, nullptr, scratch.dhidden, x, lw.a, 1.0f, rows, in, lw.rank,
                       GradMode::kAccumulate);
  }
}

}  // namespace scion::runtime
