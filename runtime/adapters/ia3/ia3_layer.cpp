#include "runtime/adapters/ia3/ia3_layer.h"

namespace scion::runtime {

void ia3_output_forward(Backend& be, float* out, float* saved, const Ia3Weights& w,
                        std::int64_t rows, int out_features) {
  if (saved) be.copy(saved, out, rows * out_features);
  be.scale_columns(out, out, w.scale, nullptr, rows, out_features, /*accumulate=*/false);
}

void ia3_output_backward(Backend& be, float* dpre, const float* dout, const float* saved,
                         const Ia3Weights& w, std::int64_t rows, int out_features) {
  be.scale_columns_backward(dpre, w.dscale, dout, saved, w.scale, nullptr, rows, out_features);
}

void ia3_input_forward(Backend& be, float* scaled, const float* x, const Ia3Weights& w,
                       std::int64_t rows, int in_features) {
  be.scale_columns(scaled, x, w.scale, nullptr, rows, in_features, /*accumulate=*/false);
}

void ia3_input_backward(Backend& be, float* dx, const float* dscaled, const float* x,
                        const Ia3Weights& w, std::int64_t rows, int in_features) {
  be.scale_columns_backward(dx, w.dscale, dscaled, x, w.scale, nullptr, rows, in_features);
}

}  // namespace scion::runtime
