// Grouped-query attention's key/value sharing (Hugging Face's repeat_kv): each of the
// NKV key or value heads of D channels serves `groups` consecutive query heads.
//   repeat_kv_forward:  out (N, NKV·groups·D), head h = inp's head h / groups of (N, NKV·D)
//   repeat_kv_backward: dinp (N, NKV·D) = the sum of its heads' gradients in dout, assigned (=)
// The attention kernel then runs with NKV·groups heads, as for multi-head attention.
#pragma once

#include <cstdint>

namespace scion::runtime::cpu {

void repeat_kv_forward(float* out, const float* inp, std::int64_t N, int NKV, int groups, int D);

void repeat_kv_backward(float* dinp, const float* dout, std::int64_t N, int NKV, int groups,
                        int D);

}  // namespace scion::runtime::cpu
