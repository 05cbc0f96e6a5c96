#include "runtime/adapters/bottleneck/bottleneck_layer.h"

namespace scion::runtime {

void bottleneck_forward(Backend& be, const BottleneckWeights& w, const BottleneckActivations& acts,
                        const float* y, float* delta, float* res, std::int64_t rows, int C) {
  const int H = w.down.out;
  be.matmul_forward(acts.pre, y, w.down.weight, w.down.bias, rows, C, H);
  be.gelu_forward(acts.act, acts.pre, rows * H);
  be.matmul_forward(delta, acts.act, w.up.weight, w.up.bias, rows, H, C);
  be.add_inplace(res, delta, 1.0f, rows * C);
}

void bottleneck_backward(Backend& be, const BottleneckWeights& w, const BottleneckActivations& acts,
                         const float* y, const float* dres, float* dy, float* dact, float* dpre,
                         std::int64_t rows, int C) {
  const int H = w.down.out;
  be.matmul_backward(dact, w.up.dweight, w.up.dbias, dres, acts.act, w.up.weight, 1.0f, rows, H, C,
                     GradMode::kAssign);
  be.gelu_backward(dpre, acts.pre, dact, rows * H);
  be.matmul_backward(dy, w.down.dweight, w.down.dbias, dpre, y, w.down.weight, 1.0f, rows, C, H,
                     GradMode::kAccumulate);
}

}  // namespace scion::runtime
