// Backend: the operations the transformer needs, behind one interface, so model code
// (runtime/model/transformer.h) runs unchanged on the CPU reference backend and on the CUDA
// backend plugin (runtime/cuda_plugin.h).
//
// A backend owns its memory: allocate() hands out backend memory, and every pointer an
// operation takes (activations, parameters, token ids, lengths, targets) points into
// memory this backend allocated. Model code never dereferences backend memory on the
// host: it moves values across with copy_to_device()/copy_to_host() at the edges (inputs
// in, losses and logits out). On the CPU those are plain memcpys.
//
// Every operation has the signature of the CPU kernel of the same name in runtime/cpu/
// (outputs first, then saved-for-backward, then inputs/weights, then sizes; parameter
// gradients accumulate, activation gradients assign unless a GradMode says otherwise).
// squared_norm_into and clip_to_global_norm take doubles of backend memory (sums of
// squares); every other pointer to a real value is fp32.
// A backend implements every operation; there is no per-operation fallback to the CPU
// (docs/architecture.md, "Backends", says why). tests/backend/ runs every operation of
// any backend against the CPU reference. Backends are stateless apart from their thread
// settings and may be shared by every model in a process; they are not thread-safe
// against concurrent calls.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <span>
#include <vector>

#include "runtime/op_types.h"
#include "runtime/tensor.h"

namespace scion::runtime {

// The precision of the products (matmul_*): fp32, or bf16 operands with fp32
// accumulation. Every other op (norms, softmax, losses, optimizer updates) is fp32 in
// both, and every pointer a backend method takes is fp32.
enum class Precision { kF32, kBF16 };
const char* precision_name(Precision precision);

class Backend {
 public:
  virtual ~Backend() = default;

  virtual std::string name() const = 0;
  virtual Device device() const = 0;
  virtual Precision precision() const { return Precision::kF32; }
  // The precision of attention's products (QKᵀ, PV and their gradients): bf16 on a bf16
  // CPU backend (cpu/head_products.h); fp32 where a backend keeps them fp32 (the CUDA
  // plugin's, in either precision). tests/backend judges attention's outputs by it.
  virtual Precision attention_precision() const { return Precision::kF32; }
  // Empty while every operation so far has succeeded; else the first failure, in words.
  // Operations return nothing and a device runs them asynchronously, so a device backend
  // records what failed (a CUDA error, an allocation of scratch) and callers ask here at
  // the points they check (runtime::check_backend, after a step or an evaluation). The CPU
  // backend's operations cannot fail.
  virtual std::string error() const { return {}; }
  // Returns once every operation issued so far has finished (a device's run asynchronously;
  // the CPU's are done when they return). Only profiling waits per operation (profiling_backend.h).
  virtual void synchronize() {}

  // nullptr when the memory cannot be had; callers must check (Arena::create does).
  virtual void* allocate(std::size_t bytes) = 0;
  // allocate() with every byte zero. The CPU backend maps large blocks fresh from the
  // kernel, already zero, instead of writing them twice (arenas: Arena::create).
  virtual void* allocate_zeroed(std::size_t bytes) {
    void* data = allocate(bytes);
    if (data) fill_zero(data, bytes);
    return data;
  }
  virtual void deallocate(void* data) = 0;
  virtual void fill_zero(void* data, std::size_t bytes) = 0;
  // True when the host may read this backend's memory in place (the CPU backend's): the
  // edges then skip their copies (host_bytes). Every other backend copies.
  virtual bool host_addressable() const { return false; }
  // Host <-> backend memory copies (a plain memcpy on the CPU).
  virtual void copy_to_device(void* dst, const void* host_src, std::size_t bytes) = 0;
  virtual void copy_to_host(void* host_dst, const void* src, std::size_t bytes) = 0;

  virtual void embedding_forward(float* out, const std::int32_t* inp, const float* wte,
                                 const float* wpe, const float* prompt, int B, int T, int P,
                                 int C) = 0;
  virtual void embedding_backward(float* dwte, float* dwpe, float* dprompt, const float* dout,
                                  const std::int32_t* inp, int B, int T, int P, int C) = 0;

  virtual void layernorm_forward(float* out, float* mean, float* rstd, const float* inp,
                                 const float* weight, const float* bias, std::int64_t N,
                                 int C) = 0;
  virtual void layernorm_backward(float* dinp, float* dweight, float* dbias, const float* dout,
                                  const float* inp, const float* weight, const float* mean,
                                  const float* rstd, std::int64_t N, int C, GradMode mode) = 0;

  virtual void matmul_forward(float* out, const float* inp, const float* weight,
                              const float* bias, std::int64_t N, int C, int OC) = 0;
  virtual void matmul_forward_accumulate(float* out, const float* inp, const float* weight,
                                         float scale, std::int64_t N, int C, int OC) = 0;
  virtual void matmul_backward(float* dinp, float* dweight, float* dbias, const float* dout,
                               const float* inp, const float* weight, float scale,
                               std::int64_t N, int C, int OC, GradMode mode) = 0;

  // Products with a frozen weight held in bf16 (runtime/cpu/bf16_matmul.h; only a bf16
  // backend's parameter pool holds them): the forward, and the input's and bias's
  // gradients (either may be null).
  virtual void matmul_forward_bf16_weight(float* out, const float* inp,
                                          const std::uint16_t* weight, const float* bias,
                                          std::int64_t N, int C, int OC) = 0;
  virtual void matmul_backward_bf16_weight(float* dinp, float* dbias, const float* dout,
                                           const std::uint16_t* weight, float scale,
                                           std::int64_t N, int C, int OC, GradMode mode) = 0;

  // Attention as cpu/attention.h runs it; window > 0 (causal only) is a sliding window:
  // query t, at position P + t, sees only the keys (prefix keys first) at positions
  // P + t - window ... P + t.
  virtual void attention_forward(float* out, float* probs, const float* q, const float* k,
                                 const float* v, const float* prefix_k, const float* prefix_v,
                                 const std::int32_t* lengths, int B, int T, int P, int C,
                                 int NH, bool causal, int window) = 0;
  virtual void attention_backward(float* dq, float* dk, float* dv, float* dprefix_k,
                                  float* dprefix_v, const float* dout, const float* probs,
                                  const float* q, const float* k, const float* v,
                                  const float* prefix_k, const float* prefix_v, int B, int T,
                                  int P, int C, int NH) = 0;

  virtual void gelu_forward(float* out, const float* inp, std::int64_t N) = 0;
  virtual void gelu_backward(float* dinp, const float* inp, const float* dout,
                             std::int64_t N) = 0;

  virtual void residual_forward(float* out, const float* inp1, const float* inp2,
                                std::int64_t N) = 0;
  virtual void copy(float* dst, const float* src, std::int64_t N) = 0;
  virtual void add_inplace(float* dst, const float* src, float scale, std::int64_t N) = 0;
  virtual void scale_inplace(float* x, float scale, std::int64_t N) = 0;
  virtual double squared_norm(const float* x, std::int64_t N) = 0;
  // Gradient clipping with one host read per step (runtime/model/optimizer.h) instead of one per
  // tensor. squared_norm_into writes what squared_norm returns into *sum, a double of
  // backend memory, without waiting for it. clip_to_global_norm reads count such sums on
  // the backend, norm = global_norm(squared_norms, count) (op_types.h), and when
  // norm > max_norm multiplies x by max_norm / (norm + kClipEpsilon) as scale_inplace
  // does; otherwise x is left alone.
  virtual void squared_norm_into(double* sum, const float* x, std::int64_t N) = 0;
  virtual void clip_to_global_norm(float* x, std::int64_t N, const double* squared_norms, int count,
                                   float max_norm) = 0;
  // Per-column scaling of an (N, C) array (runtime/cpu/column_scale.h): DoRA's magnitude
  // over its weight norm. out = inp · scale / divisor per column (divisor null: 1),
  // assigned or (accumulate) added; the backward assigns dinp and adds into dscale, either
  // null when not wanted. row_norms: out[n] = ‖x[n, :]‖₂.
  virtual void scale_columns(float* out, const float* inp, const float* scale, const float* divisor,
                             std::int64_t N, int C, bool accumulate) = 0;
  virtual void scale_columns_backward(float* dinp, float* dscale, const float* dout,
                                      const float* inp, const float* scale, const float* divisor,
                                      std::int64_t N, int C) = 0;
  virtual void row_norms(float* out, const float* x, std::int64_t N, int C) = 0;

  // Returns the number of rows whose target is not ignored.
  virtual std::int64_t cross_entropy_forward(float* losses, float* probs, const float* logits,
                                             const std::int32_t* targets, std::int64_t N,
                                             int V) = 0;
  virtual void cross_entropy_backward(float* dlogits, const float* probs,
                                      const std::int32_t* targets, float scale, std::int64_t N,
                                      int V) = 0;
  // Class-weighted cross-entropy's backward (cpu/cross_entropy.h); weights: (V).
  virtual void cross_entropy_backward_weighted(float* dlogits, const float* probs,
                                               const std::int32_t* targets, const float* weights,
                                               float scale, std::int64_t N, int V) = 0;
  // Multi-label heads: binary cross-entropy with logits (cpu/binary_cross_entropy.h).
  virtual void bce_with_logits_forward(float* losses, float* probs, const float* logits,
                                       const float* targets, std::int64_t N, int K) = 0;
  virtual void bce_with_logits_backward(float* dlogits, const float* probs, const float* targets,
                                        float scale, std::int64_t N, int K) = 0;

  virtual void pool_forward(float* out, const float* inp, const std::int32_t* lengths, int B,
                            int S, int offset, int C, PoolMode mode) = 0;
  virtual void pool_backward(float* dinp, const float* dout, const std::int32_t* lengths, int B,
                             int S, int offset, int C, PoolMode mode) = 0;

  // Element i draws position first + i of the (seed, stream) mask stream (cpu/dropout.h).
  virtual void dropout_forward(float* out, float* mask, const float* inp, std::int64_t N,
                               float p, std::uint64_t seed, std::uint64_t stream,
                               std::uint64_t first) = 0;
  virtual void dropout_backward(float* dinp, const float* dout, const float* mask,
                                std::int64_t N) = 0;

  virtual void adamw_update(float* param, const float* grad, float* m, float* v, std::int64_t n,
                            float lr, float beta1, float beta2, float eps, float weight_decay,
                            int step) = 0;
  virtual void sgd_update(float* param, const float* grad, float* velocity, std::int64_t n,
                          float lr, float momentum, float weight_decay) = 0;

  // Operations only imported Hugging Face architectures use (BERT: layer_norm_eps, exact
  // GELU, the pooler's tanh).
  virtual void layernorm_forward_eps(float* out, float* mean, float* rstd, const float* inp,
                                     const float* weight, const float* bias, std::int64_t N,
                                     int C, float eps) = 0;
  virtual void gelu_erf_forward(float* out, const float* inp, std::int64_t N) = 0;
  virtual void gelu_erf_backward(float* dinp, const float* inp, const float* dout,
                                 std::int64_t N) = 0;
  virtual void tanh_forward(float* out, const float* inp, std::int64_t N) = 0;
  virtual void tanh_backward(float* dinp, const float* out, const float* dout,
                             std::int64_t N) = 0;

  // Operations only the Llama family uses: RMSNorm (cpu/rmsnorm.h), rotary positions
  // (cpu/rope.h), the SwiGLU activation (cpu/swiglu.h) and grouped-query attention's
  // shared key/value heads (cpu/grouped_kv.h).
  virtual void rmsnorm_forward(float* out, float* rstd, const float* inp, const float* weight,
                               std::int64_t N, int C, float eps) = 0;
  virtual void rmsnorm_backward(float* dinp, float* dweight, const float* dout,
                                const float* inp, const float* weight, const float* rstd,
                                std::int64_t N, int C, GradMode mode) = 0;
  virtual void rope_forward(float* out, const float* inp, int B, int T, int NH, int D, int pos0,
                            float theta, float position_scale) = 0;
  virtual void rope_backward(float* dinp, const float* dout, int B, int T, int NH, int D,
                             int pos0, float theta, float position_scale) = 0;
  virtual void swiglu_forward(float* out, const float* gate, const float* up, std::int64_t N) = 0;
  virtual void swiglu_backward(float* dgate, float* dup, const float* dout, const float* gate,
                               const float* up, std::int64_t N) = 0;
  virtual void repeat_kv_forward(float* out, const float* inp, std::int64_t N, int NKV,
                                 int groups, int D) = 0;
  virtual void repeat_kv_backward(float* dinp, const float* dout, std::int64_t N, int NKV,
                                  int groups, int D) = 0;
};

// The values of an fp32 tensor of `backend`'s memory, copied to the host.
// REQUIRES: tensor.dtype == kF32.
inline std::vector<float> copy_to_host(Backend& backend, const Tensor& tensor) {
  std::vector<float> values(static_cast<std::size_t>(tensor.numel()));
  backend.copy_to_host(values.data(), tensor.data, tensor.bytes());
  return values;
}

// The bytes of a tensor of `backend`'s memory (any dtype), copied to the host.
inline std::vector<std::byte> copy_bytes_to_host(Backend& backend, const Tensor& tensor) {
  std::vector<std::byte> bytes(tensor.bytes());
  backend.copy_to_host(bytes.data(), tensor.data, bytes.size());
  return bytes;
}

// `tensor`'s bytes, readable on the host: in place where the backend's memory is the host's,
// else copied into `keep` (which must outlive the span). Committing or checkpointing a
// W3-sized model on the CPU would otherwise hold a second copy of every parameter.
inline std::span<const std::byte> host_bytes(Backend& backend, const Tensor& tensor,
                                             std::vector<std::byte>& keep) {
  if (backend.host_addressable())
    return {static_cast<const std::byte*>(tensor.data), tensor.bytes()};
  keep = copy_bytes_to_host(backend, tensor);
  return keep;
}

// Writes `host_src` (a tensor of host memory) into `dst` (`backend`'s memory), converting
// the dtype on the host first when the two differ (an fp32 value into a bf16-held view).
// REQUIRES: host_src.numel() == dst.numel().
inline void copy_to_device_as(Backend& backend, const Tensor& dst, const Tensor& host_src) {
  if (host_src.dtype == dst.dtype) {
    backend.copy_to_device(dst.data, host_src.data, dst.bytes());
    return;
  }
  std::vector<std::byte> staged(dst.bytes());
  convert(host_src, Tensor{staged.data(), dst.shape, dst.dtype, Device::kCpu});
  backend.copy_to_device(dst.data, staged.data(), staged.size());
}

// Which library runs the CPU backend's fp32 products. kAuto: each class of product on the
// library chosen for this machine (runtime/cpu/matmul_choice.h: never a generic OpenBLAS
// kernel on a CPU with AVX2). OpenBLAS is the reference the op harness compares with;
// oneDNN (runtime/cpu/onednn_gemm.h) picks kernels for the CPU at run time. bf16
// products run on oneDNN wherever it has bf16 kernels.
enum class MatmulLibrary { kAuto, kOnednn, kOpenBlas };

struct CpuBackendOptions {
  int threads = 0;  // <= 0 keeps the current OpenMP settings; otherwise the team's size
  Precision precision = Precision::kF32;
  MatmulLibrary fp32_matmul = MatmulLibrary::kAuto;
};

// The CPU backend (OpenBLAS, oneDNN and OpenMP), always available. The first form is
// the fp32 reference with `threads` as in CpuBackendOptions.
std::unique_ptr<Backend> make_cpu_backend(int threads = 0);
std::unique_ptr<Backend> make_cpu_backend(const CpuBackendOptions& options);

}  // namespace scion::runtime
