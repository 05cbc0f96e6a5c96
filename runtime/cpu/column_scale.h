// Per-column scaling of an (N, C) array and the row norms of one: the operations IA³'s
// learned vectors and DoRA's magnitude over its weight norm need
// (runtime/adapters/lora/dora_layer.h).
//
// scale_columns: out[n, c] = inp[n, c] · scale[c] / divisor[c] (divisor null: 1),
// assigned (=) or, with accumulate, added (+=); out may be inp when assigning.
// scale_columns_backward: dinp = dout · scale / divisor, assigned (an activation
// gradient), and dscale[c] += Σ_n dout[n, c] · inp[n, c] / divisor[c] (a parameter
// gradient); either output may be null. row_norms: out[n] = sqrt(Σ_c x[n, c]²).
// Sums run in double, in a fixed order per column or row, so any thread count gives the
// same bits.
#pragma once

#include <cstdint>

namespace scion::runtime::cpu {

void scale_columns(float* out, const float* inp, const float* scale, const float* divisor,
                   std::int64_t N, int C, bool accumulate);

void scale_columns_backward(float* dinp, float* dscale, const float* dout, const float* inp,
                            const float* scale, const float* divisor, std::int64_t N, int C);

void row_norms(float* out, const float* x, std::int64_t N, int C);

}  // namespace scion::runtime::cpu
