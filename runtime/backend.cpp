// Default implementations of the Backend operations that imported architectures add:
// the CPU kernels, for backends whose memory the host addresses.
#include "runtime/backend.h"

#include "runtime/cpu/gelu.h"
#include "runtime/cpu/grouped_kv.h"
#include "runtime/cpu/layernorm.h"
#include "runtime/cpu/rmsnorm.h"
#include "runtime/cpu/rope.h"
#include "runtime/cpu/swiglu.h"

namespace scion::runtime {

void Backend::layernorm_forward_eps(float* out, float* mean, float* rstd, const float* inp,
                                    const float* weight, const float* bias, std::int64_t N,
                                    int C, float eps) {
  cpu::layernorm_forward(out, mean, rstd, inp, weight, bias, N, C, eps);
}

void Backend::gelu_erf_forward(float* out, const float* inp, std::int64_t N) {
  cpu::gelu_erf_forward(out, inp, N);
}

void Backend::gelu_erf_backward(float* dinp, const float* inp, const float* dout,
                                std::int64_t N) {
  cpu::gelu_erf_backward(dinp, inp, dout, N);
}

void Backend::tanh_forward(float* out, const float* inp, std::int64_t N) {
  cpu::tanh_forward(out, inp, N);
}

void Backend::tanh_backward(float* dinp, const float* out, const float* dout, std::int64_t N) {
  cpu::tanh_backward(dinp, out, dout, N);
}

void Backend::rmsnorm_forward(float* out, float* rstd, const float* inp, const float* weight,
                              std::int64_t N, int C, float eps) {
  cpu::rmsnorm_forward(out, rstd, inp, weight, N, C, eps);
}

void Backend::rmsnorm_backward(float* dinp, float* dweight, const float* dout, const float* inp,
                               const float* weight, const float* rstd, std::int64_t N, int C,
                               GradMode mode) {
  cpu::rmsnorm_backward(dinp, dweight, dout, inp, weight, rstd, N, C, mode);
}

void Backend::rope_forward(float* out, const float* inp, int B, int T, int NH, int D, int pos0,
                           float theta, float position_scale) {
  cpu::rope_forward(out, inp, B, T, NH, D, pos0, theta, position_scale);
}

void Backend::rope_backward(float* dinp, const float* dout, int B, int T, int NH, int D,
                            int pos0, float theta, float position_scale) {
  cpu::rope_backward(dinp, dout, B, T, NH, D, pos0, theta, position_scale);
}

void Backend::swiglu_forward(float* out, const float* gate, const float* up, std::int64_t N) {
  cpu::swiglu_forward(out, gate, up, N);
}

void Backend::swiglu_backward(float* dgate, float* dup, const float* dout, const float* gate,
                              const float* up, std::int64_t N) {
  cpu::swiglu_backward(dgate, dup, dout, gate, up, N);
}

void Backend::repeat_kv_forward(float* out, const float* inp, std::int64_t N, int NKV,
                                int groups, int D) {
  cpu::repeat_kv_forward(out, inp, N, NKV, groups, D);
}

void Backend::repeat_kv_backward(float* dinp, const float* dout, std::int64_t N, int NKV,
                                 int groups, int D) {
  cpu::repeat_kv_backward(dinp, dout, N, NKV, groups, D);
}

}  // namespace scion::runtime
