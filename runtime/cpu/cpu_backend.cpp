// The CPU reference backend: forwards every Backend method to the kernel of the same name
// in runtime/cpu/.
//
// Products: fp32 ones run on the library CpuBackendOptions::fp32_matmul names, by default
// (kAuto) the one this machine's choice gives each product's class (matmul_choice.h);
// attention's run through HeadProducts (head_products.h), in bf16 when the backend is.
//
// Threads: one OpenMP team runs everything. OpenBLAS (the pthread build Debian ships) is
// set to one thread, and runtime/cpu/gemm.h splits products over the team, so no second
// pool competes for the cores between loops. How idle workers wait (spin, sleep, or spin
// briefly and sleep) is libgomp's setting, read before main: cli/main.cpp chooses it for
// the scion command, and bench/README.md ("OpenMP waiting") has the measurements.
#include <cblas.h>
#include <omp.h>

#include <cstdlib>
#include <cstring>
#include <limits>

#include "runtime/backend.h"
#include "runtime/cpu/attention.h"
#include "runtime/cpu/bf16_matmul.h"
#include "runtime/cpu/binary_cross_entropy.h"
#include "runtime/cpu/column_scale.h"
#include "runtime/cpu/cross_entropy.h"
#include "runtime/cpu/dropout.h"
#include "runtime/cpu/elementwise.h"
#include "runtime/cpu/embedding.h"
#include "runtime/cpu/gelu.h"
#include "runtime/cpu/grouped_kv.h"
#include "runtime/cpu/head_products.h"
#include "runtime/cpu/host_memory.h"
#include "runtime/cpu/layernorm.h"
#include "runtime/cpu/matmul.h"
#include "runtime/cpu/matmul_choice.h"
#include "runtime/cpu/onednn_gemm.h"
#include "runtime/cpu/optimizer_kernels.h"
#include "runtime/cpu/pooling.h"
#include "runtime/cpu/rmsnorm.h"
#include "runtime/cpu/rope.h"
#include "runtime/cpu/swiglu.h"

extern "C" void openblas_set_num_threads(int num_threads);

namespace scion::runtime {
namespace {

class CpuBackend final : public Backend {
 public:
  explicit CpuBackend(const CpuBackendOptions& options)
      : options_(options), heads_(options.precision, options.fp32_matmul) {
    if (options.threads > 0) omp_set_num_threads(options.threads);
    // Products are split over the OpenMP team by cpu::gemm; see gemm.h for why OpenBLAS's
    // own threads stay off.
    openblas_set_num_threads(1);
  }

  std::string name() const override { return "cpu"; }
  Device device() const override { return Device::kCpu; }
  bool host_addressable() const override { return true; }
  Precision precision() const override { return options_.precision; }
  Precision attention_precision() const override { return options_.precision; }

  void* allocate(std::size_t bytes) override { return memory_.allocate(bytes, false); }
  void* allocate_zeroed(std::size_t bytes) override { return memory_.allocate(bytes, true); }
  void deallocate(void* data) override { memory_.deallocate(data); }
  void fill_zero(void* data, std::size_t bytes) override { cpu::fill_zero(data, bytes); }
  void copy_to_device(void* dst, const void* src, std::size_t bytes) override {
    std::memcpy(dst, src, bytes);
  }
  void copy_to_host(void* dst, const void* src, std::size_t bytes) override {
    std::memcpy(dst, src, bytes);
  }

  void embedding_forward(float* out, const std::int32_t* inp, const float* wte, const float* wpe,
                         const float* prompt, int B, int T, int P, int C) override {
    cpu::embedding_forward(out, inp, wte, wpe, prompt, B, T, P, C);
  }
  void embedding_backward(float* dwte, float* dwpe, float* dprompt, const float* dout,
                          const std::int32_t* inp, int B, int T, int P, int C) override {
    cpu::embedding_backward(dwte, dwpe, dprompt, dout, inp, B, T, P, C);
  }
  void layernorm_forward(float* out, float* mean, float* rstd, const float* inp,
                         const float* weight, const float* bias, std::int64_t N,
                         int C) override {
    cpu::layernorm_forward(out, mean, rstd, inp, weight, bias, N, C);
  }
  void layernorm_backward(float* dinp, float* dweight, float* dbias, const float* dout,
                          const float* inp, const float* weight, const float* mean,
                          const float* rstd, std::int64_t N, int C, GradMode mode) override {
    cpu::layernorm_backward(dinp, dweight, dbias, dout, inp, weight, mean, rstd, N, C, mode);
  }
  void matmul_forward(float* out, const float* inp, const float* weight, const float* bias,
                      std::int64_t N, int C, int OC) override {
    if (options_.precision == Precision::kBF16)
      cpu::matmul_forward_bf16(out, inp, weight, bias, N, C, OC);
    else
      cpu::matmul_forward(out, inp, weight, bias, N, C, OC, fp32_gemm());
  }
  void matmul_forward_accumulate(float* out, const float* inp, const float* weight, float scale,
                                 std::int64_t N, int C, int OC) override {
    if (options_.precision == Precision::kBF16)
      cpu::matmul_forward_accumulate_bf16(out, inp, weight, scale, N, C, OC);
    else
      cpu::matmul_forward_accumulate(out, inp, weight, scale, N, C, OC, fp32_gemm());
  }
  void matmul_forward_bf16_weight(float* out, const float* inp, const std::uint16_t* weight,
                                  const float* bias, std::int64_t N, int C, int OC) override {
    cpu::matmul_forward_bf16_weight(out, inp, weight, bias, N, C, OC);
  }
  void matmul_backward_bf16_weight(float* dinp, float* dbias, const float* dout,
                                   const std::uint16_t* weight, float scale, std::int64_t N,
                                   int C, int OC, GradMode mode) override {
    cpu::matmul_backward_bf16_weight(dinp, dbias, dout, weight, scale, N, C, OC, mode);
  }
  void matmul_backward(float* dinp, float* dweight, float* dbias, const float* dout,
                       const float* inp, const float* weight, float scale, std::int64_t N, int C,
                       int OC, GradMode mode) override {
    if (options_.precision == Precision::kBF16)
      cpu::matmul_backward_bf16(dinp, dweight, dbias, dout, inp, weight, scale, N, C, OC, mode);
    else
      cpu::matmul_backward(dinp, dweight, dbias, dout, inp, weight, scale, N, C, OC, mode,
                           fp32_gemm());
  }
  void attention_forward(float* out, float* probs, const float* q, const float* k, const float* v,
                         const float* prefix_k, const float* prefix_v, const std::int32_t* lengths,
                         int B, int T, int P, int C, int NH, bool causal, int window) override {
    cpu::attention_forward(out, probs, q, k, v, prefix_k, prefix_v, lengths, B, T, P, C, NH, causal,
                           window, heads_);
  }
  void attention_backward(float* dq, float* dk, float* dv, float* dprefix_k, float* dprefix_v,
                          const float* dout, const float* probs, const float* q, const float* k,
                          const float* v, const float* prefix_k, const float* prefix_v, int B,
                          int T, int P, int C, int NH) override {
    cpu::attention_backward(dq, dk, dv, dprefix_k, dprefix_v, dout, probs, q, k, v, prefix_k,
                            prefix_v, B, T, P, C, NH, heads_);
  }
  void gelu_forward(float* out, const float* inp, std::int64_t N) override {
    cpu::gelu_forward(out, inp, N);
  }
  void gelu_backward(float* dinp, const float* inp, const float* dout, std::int64_t N) override {
    cpu::gelu_backward(dinp, inp, dout, N);
  }
  void residual_forward(float* out, const float* a, const float* b, std::int64_t N) override {
    cpu::residual_forward(out, a, b, N);
  }
  void copy(float* dst, const float* src, std::int64_t N) override { cpu::copy(dst, src, N); }
  void add_inplace(float* dst, const float* src, float scale, std::int64_t N) override {
    cpu::add_inplace(dst, src, scale, N);
  }
  void scale_inplace(float* x, float scale, std::int64_t N) override {
    cpu::scale_inplace(x, scale, N);
  }
  double squared_norm(const float* x, std::int64_t N) override {
    return cpu::squared_norm(x, N);
  }
  void squared_norm_into(double* sum, const float* x, std::int64_t N) override {
    *sum = cpu::squared_norm(x, N);
  }
  void clip_to_global_norm(float* x, std::int64_t N, const double* squared_norms, int count,
                           float max_norm) override {
    cpu::clip_to_global_norm(x, N, squared_norms, count, max_norm);
  }
  void scale_columns(float* out, const float* inp, const float* scale, const float* divisor,
                     std::int64_t N, int C, bool accumulate) override {
    cpu::scale_columns(out, inp, scale, divisor, N, C, accumulate);
  }
  void scale_columns_backward(float* dinp, float* dscale, const float* dout, const float* inp,
                              const float* scale, const float* divisor, std::int64_t N,
                              int C) override {
    cpu::scale_columns_backward(dinp, dscale, dout, inp, scale, divisor, N, C);
  }
  void row_norms(float* out, const float* x, std::int64_t N, int C) override {
    cpu::row_norms(out, x, N, C);
  }
  std::int64_t cross_entropy_forward(float* losses, float* probs, const float* logits,
                                     const std::int32_t* targets, std::int64_t N,
                                     int V) override {
    return cpu::cross_entropy_forward(losses, probs, logits, targets, N, V);
  }
  void cross_entropy_backward(float* dlogits, const float* probs, const std::int32_t* targets,
                              float scale, std::int64_t N, int V) override {
    cpu::cross_entropy_backward(dlogits, probs, targets, scale, N, V);
  }
  void cross_entropy_backward_weighted(float* dlogits, const float* probs,
                                       const std::int32_t* targets, const float* weights,
                                       float scale, std::int64_t N, int V) override {
    cpu::cross_entropy_backward_weighted(dlogits, probs, targets, weights, scale, N, V);
  }
  void bce_with_logits_forward(float* losses, float* probs, const float* logits,
                               const float* targets, std::int64_t N, int K) override {
    cpu::bce_with_logits_forward(losses, probs, logits, targets, N, K);
  }
  void bce_with_logits_backward(float* dlogits, const float* probs, const float* targets,
                                float scale, std::int64_t N, int K) override {
    cpu::bce_with_logits_backward(dlogits, probs, targets, scale, N, K);
  }
  void pool_forward(float* out, const float* inp, const std::int32_t* lengths, int B, int S,
                    int offset, int C, PoolMode mode) override {
    cpu::pool_forward(out, inp, lengths, B, S, offset, C, mode);
  }
  void pool_backward(float* dinp, const float* dout, const std::int32_t* lengths, int B, int S,
                     int offset, int C, PoolMode mode) override {
    cpu::pool_backward(dinp, dout, lengths, B, S, offset, C, mode);
  }
  void dropout_forward(float* out, float* mask, const float* inp, std::int64_t N, float p,
                       std::uint64_t seed, std::uint64_t stream, std::uint64_t first) override {
    cpu::dropout_forward(out, mask, inp, N, p, seed, stream, first);
  }
  void dropout_backward(float* dinp, const float* dout, const float* mask,
                        std::int64_t N) override {
    cpu::dropout_backward(dinp, dout, mask, N);
  }
  void adamw_update(float* param, const float* grad, float* m, float* v, std::int64_t n,
                    float lr, float beta1, float beta2, float eps, float weight_decay,
                    int step) override {
    cpu::adamw_update(param, grad, m, v, n, lr, beta1, beta2, eps, weight_decay, step);
  }
  void sgd_update(float* param, const float* grad, float* velocity, std::int64_t n, float lr,
                  float momentum, float weight_decay) override {
    cpu::sgd_update(param, grad, velocity, n, lr, momentum, weight_decay);
  }
  void layernorm_forward_eps(float* out, float* mean, float* rstd, const float* inp,
                             const float* weight, const float* bias, std::int64_t N, int C,
                             float eps) override {
    cpu::layernorm_forward(out, mean, rstd, inp, weight, bias, N, C, eps);
  }
  void gelu_erf_forward(float* out, const float* inp, std::int64_t N) override {
    cpu::gelu_erf_forward(out, inp, N);
  }
  void gelu_erf_backward(float* dinp, const float* inp, const float* dout,
                         std::int64_t N) override {
    cpu::gelu_erf_backward(dinp, inp, dout, N);
  }
  void tanh_forward(float* out, const float* inp, std::int64_t N) override {
    cpu::tanh_forward(out, inp, N);
  }
  void tanh_backward(float* dinp, const float* out, const float* dout, std::int64_t N) override {
    cpu::tanh_backward(dinp, out, dout, N);
  }

  void rmsnorm_forward(float* out, float* rstd, const float* inp, const float* weight,
                       std::int64_t N, int C, float eps) override {
    cpu::rmsnorm_forward(out, rstd, inp, weight, N, C, eps);
  }
  void rmsnorm_backward(float* dinp, float* dweight, const float* dout, const float* inp,
                        const float* weight, const float* rstd, std::int64_t N, int C,
                        GradMode mode) override {
    cpu::rmsnorm_backward(dinp, dweight, dout, inp, weight, rstd, N, C, mode);
  }
  void rope_forward(float* out, const float* inp, int B, int T, int NH, int D, int pos0,
                    float theta, float position_scale) override {
    cpu::rope_forward(out, inp, B, T, NH, D, pos0, theta, position_scale);
  }
  void rope_backward(float* dinp, const float* dout, int B, int T, int NH, int D, int pos0,
                     float theta, float position_scale) override {
    cpu::rope_backward(dinp, dout, B, T, NH, D, pos0, theta, position_scale);
  }
  void swiglu_forward(float* out, const float* gate, const float* up, std::int64_t N) override {
    cpu::swiglu_forward(out, gate, up, N);
  }
  void swiglu_backward(float* dgate, float* dup, const float* dout, const float* gate,
                       const float* up, std::int64_t N) override {
    cpu::swiglu_backward(dgate, dup, dout, gate, up, N);
  }
  void repeat_kv_forward(float* out, const float* inp, std::int64_t N, int NKV, int groups,
                         int D) override {
    cpu::repeat_kv_forward(out, inp, N, NKV, groups, D);
  }
  void repeat_kv_backward(float* dinp, const float* dout, std::int64_t N, int NKV, int groups,
                          int D) override {
    cpu::repeat_kv_backward(dinp, dout, N, NKV, groups, D);
  }

 private:
  cpu::GemmFn fp32_gemm() const {
    switch (options_.fp32_matmul) {
      case MatmulLibrary::kOnednn:
        return cpu::gemm_onednn_f32;
      case MatmulLibrary::kOpenBlas:
        return cpu::gemm;
      case MatmulLibrary::kAuto:
        break;
    }
    return cpu::gemm_chosen;
  }

  CpuBackendOptions options_;
  cpu::HeadProducts heads_;
  cpu::HostMemory memory_;
};

}  // namespace

const char* precision_name(Precision precision) {
  return precision == Precision::kBF16 ? "bf16" : "fp32";
}

std::unique_ptr<Backend> make_cpu_backend(int threads) {
  return make_cpu_backend(CpuBackendOptions{.threads = threads});
}

std::unique_ptr<Backend> make_cpu_backend(const CpuBackendOptions& options) {
  return std::make_unique<CpuBackend>(options);
}

}  // namespace scion::runtime
