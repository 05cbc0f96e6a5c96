// Default implementations of the Backend operations that imported architectures and bf16
// frozen weights add: the CPU kernels, for backends whose memory the host addresses.
#include "runtime/backend.h"

#include "runtime/cpu/bf16_matmul.h"
#include "runtime/cpu/gelu.h"
#include "runtime/cpu/layernorm.h"

namespace scion::runtime {

void Backend::matmul_forward_bf16_weight(float* out, const float* inp,
                                         const std::uint16_t* weight, const float* bias,
                                         std::int64_t N, int C, int OC) {
  cpu::matmul_forward_bf16_weight(out, inp, weight, bias, N, C, OC);
}

void Backend::matmul_backward_bf16_weight(float* dinp, float* dbias, const float* dout,
                                          const std::uint16_t* weight, float scale,
                                          std::int64_t N, int C, int OC, GradMode mode) {
  cpu::matmul_backward_bf16_weight(dinp, dbias, dout, weight, scale, N, C, OC, mode);
}

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

}  // namespace scion::runtime
