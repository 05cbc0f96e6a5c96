// The CUDA backend: device memory from the device's stream-ordered pool (DeviceMemory),
// the linear layers' products on cuBLASLt (lt_matmul.h: the bias in the epilogue; in fp32
// without TF32, the bias gradient too), or on cublasGemmEx for a shape cuBLASLt offers no
// algorithm for; attention's batched products on cuBLAS (gemm.h); every other op a kernel
// of kernels.h. The op-by-op contract is the CPU kernel's of the same
// name (runtime/cpu/); tests/backend/ compares each op with it.
//
// Precision: in kBF16, matmul_* round both operands to bf16 into device scratch and
// multiply bf16 x bf16 with fp32 accumulation into fp32 outputs, as the CPU's bf16
// backend does; attention's products, norms, softmax, losses and updates stay fp32 in
// both precisions (the CPU's bf16 backend multiplies attention in bf16: its
// attention_precision(); this one keeps the default, fp32). The *_bf16_weight ops multiply the stored bf16 weight
// with the bf16-rounded input in both precisions.
//
// Attention: q, k, v are (B, T, C) with head h at columns [h·hs, (h+1)·hs). For each head
// one strided-batched product covers the B sequences (stride T·C; probs stride NH·T·S);
// the segment's prefix keys/values (P, C) are shared by its B sequences, so their stride
// is 0. The prefix gradients are sums over the sequences: one batched product over the
// heads per sequence, each adding (beta = 1) into the zeroed gradient, in sequence order.
#include "runtime/cuda/cuda_backend.h"

#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <string>

#include "runtime/cuda/error_log.h"
#include "runtime/cuda/gemm.h"
#include "runtime/cuda/kernels.h"
#include "runtime/cuda/lt_matmul.h"

namespace scion::runtime::cuda {
namespace {

constexpr cudaStream_t kStream = nullptr;  // the legacy default stream

// The backend's device memory: stream-ordered allocations from the device's default
// memory pool (cudaMallocAsync) on the stream every op runs on, the pool told to keep
// what is freed (release threshold: all of it) instead of returning it to the driver at
// each synchronisation. scion's arenas (runtime/arena.h) already hold each role's tensors
// in one allocation, so allocations are few; but a new batch shape makes a new
// activations arena, and with cudaMalloc/cudaFree each of those cost a driver call and a
// device-wide synchronisation (cudaFree waits for the device), where the pool hands back
// memory it holds, in stream order: a kernel still reading freed memory is ahead of
// whatever reuses it on the same stream. Devices without memory pools
// (cudaDevAttrMemoryPoolsSupported = 0) get cudaMalloc/cudaFree.
class DeviceMemory {
 public:
  DeviceMemory(ErrorLog& log, cudaStream_t stream) : stream_(stream) {
    int device = 0, supported = 0;
    log.check(cudaGetDevice(&device), "cudaGetDevice");
    if (cudaDeviceGetAttribute(&supported, cudaDevAttrMemoryPoolsSupported, device) != cudaSuccess ||
        supported == 0) {
      cudaGetLastError();
      return;
    }
    cudaMemPool_t pool = nullptr;
    log.check(cudaDeviceGetDefaultMemPool(&pool, device), "cudaDeviceGetDefaultMemPool");
    if (pool == nullptr) return;
    std::uint64_t keep_all = UINT64_MAX;
    log.check(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep_all),
              "cudaMemPoolSetAttribute (release threshold)");
    pool_ = pool;
  }

  // `bytes` of device memory, or null when there is none to be had (not logged: out of
  // memory is the caller's to report, and the error is cleared so it does not stick).
  void* allocate(std::size_t bytes) {
    void* data = nullptr;
    if (pool_ == nullptr) {
      if (cudaMalloc(&data, bytes) == cudaSuccess) return data;
      cudaGetLastError();
      return nullptr;
    }
    if (cudaMallocAsync(&data, bytes, stream_) == cudaSuccess) return data;
    cudaGetLastError();
    // What the pool holds but no allocation uses goes back to the driver, then once more.
    cudaStreamSynchronize(stream_);
    cudaMemPoolTrimTo(pool_, 0);
    if (cudaMallocAsync(&data, bytes, stream_) == cudaSuccess) return data;
    cudaGetLastError();
    return nullptr;
  }
  cudaError_t free(void* data) {
    if (data == nullptr) return cudaSuccess;
    return pool_ != nullptr ? cudaFreeAsync(data, stream_) : cudaFree(data);
  }

 private:
  cudaStream_t stream_;
  cudaMemPool_t pool_ = nullptr;
};

// Device memory reused across calls (training repeats the same shapes); grows, never
// shrinks. The old buffer is freed in stream order (DeviceMemory), so a kernel still
// reading it finishes first.
class DeviceScratch {
 public:
  explicit DeviceScratch(DeviceMemory& memory) : memory_(memory) {}
  ~DeviceScratch() { memory_.free(data_); }
  DeviceScratch(const DeviceScratch&) = delete;
  DeviceScratch& operator=(const DeviceScratch&) = delete;
  // At least `bytes`, or null with the failure in `log`.
  void* get(std::size_t bytes, ErrorLog& log, const char* what) {
    if (bytes <= bytes_) return data_;
    log.check(memory_.free(data_), what);
    data_ = nullptr;
    bytes_ = 0;
    void* data = memory_.allocate(bytes);
    if (data == nullptr) {
      log.fail(std::string(what) + ": out of device memory for " + std::to_string(bytes) + " bytes");
      return nullptr;
    }
    data_ = data;
    bytes_ = bytes;
    return data_;
  }

 private:
  DeviceMemory& memory_;
  void* data_ = nullptr;
  std::size_t bytes_ = 0;
};

class CudaBackend final : public Backend {
 public:
  CudaBackend(Precision precision, const BackendFlags& flags)
      : precision_(precision),
        flags_(flags),
        gemm_(log_, flags.allow_tf32),
        lt_(log_, flags.allow_tf32, kStream),
        memory_(log_, kStream),
        scratch_inp_(memory_),
        scratch_weight_(memory_),
        scratch_dout_(memory_),
        scratch_attention_(memory_),
        scratch_bias_grad_(memory_),
        scratch_column_sums_(memory_),
        scratch_embedding_(memory_),
        reduction_scratch_(memory_) {
    // partials of squared_norm, its result, cross_entropy_forward's count
    reduction_ = static_cast<double*>(
        reduction_scratch_.get((kNormBlocks + 2) * sizeof(double), log_, "cudaMalloc (reductions)"));
  }

  std::string name() const override { return "cuda"; }
  Device device() const override { return Device::kCuda; }
  Precision precision() const override { return precision_; }
  std::string error() const override { return log_.first(); }
  void synchronize() override { log_.check(cudaStreamSynchronize(kStream), "synchronize"); }

  void* allocate(std::size_t bytes) override {
    // A zero-byte request still gets a distinct pointer, as aligned_alloc gives the CPU.
    // Out of memory is the caller's to handle (Arena::create): null, nothing logged.
    return memory_.allocate(bytes == 0 ? 1 : bytes);
  }
  void deallocate(void* data) override { log_.check(memory_.free(data), "deallocate"); }
  void fill_zero(void* data, std::size_t bytes) override {
    log_.check(cudaMemsetAsync(data, 0, bytes, kStream), "fill_zero");
  }
  void copy_to_device(void* dst, const void* host_src, std::size_t bytes) override {
    log_.check(cudaMemcpy(dst, host_src, bytes, cudaMemcpyHostToDevice), "copy_to_device");
  }
  void copy_to_host(void* host_dst, const void* src, std::size_t bytes) override {
    log_.check(cudaMemcpy(host_dst, src, bytes, cudaMemcpyDeviceToHost), "copy_to_host");
  }

  void embedding_forward(float* out, const std::int32_t* inp, const float* wte, const float* wpe,
                         const float* prompt, int B, int T, int P, int C) override {
    cuda::embedding_forward(out, inp, wte, wpe, prompt, B, T, P, C, kStream);
    log_.launched("embedding_forward");
  }
  void embedding_backward(float* dwte, float* dwpe, float* dprompt, const float* dout,
                          const std::int32_t* inp, int B, int T, int P, int C) override {
    const std::size_t bytes = embedding_backward_scratch_bytes(B, T);
    void* scratch =
        dwte ? scratch_embedding_.get(bytes, log_, "cudaMalloc (embedding gradient)") : nullptr;
    if (dwte && scratch == nullptr) return;  // logged
    log_.check(cuda::embedding_backward(dwte, dwpe, dprompt, dout, inp, B, T, P, C, scratch, bytes,
                                        kStream),
               "embedding_backward (token sort)");
    log_.launched("embedding_backward");
  }

  void layernorm_forward(float* out, float* mean, float* rstd, const float* inp,
                         const float* weight, const float* bias, std::int64_t N,
                         int C) override {
    cuda::layernorm_forward(out, mean, rstd, inp, weight, bias, N, C, kLayerNormEps, kStream);
    log_.launched("layernorm_forward");
  }
  void layernorm_forward_eps(float* out, float* mean, float* rstd, const float* inp,
                             const float* weight, const float* bias, std::int64_t N, int C,
                             float eps) override {
    cuda::layernorm_forward(out, mean, rstd, inp, weight, bias, N, C, eps, kStream);
    log_.launched("layernorm_forward_eps");
  }
  void layernorm_backward(float* dinp, float* dweight, float* dbias, const float* dout,
                          const float* inp, const float* weight, const float* mean,
                          const float* rstd, std::int64_t N, int C, GradMode mode) override {
    float* sums = dweight || dbias ? column_scratch(norm_backward_scratch(N, C)) : nullptr;
    if ((dweight || dbias) && sums == nullptr) return;  // logged
    cuda::layernorm_backward(dinp, dweight, dbias, dout, inp, weight, mean, rstd, N, C, mode, sums,
                             kStream);
    log_.launched("layernorm_backward");
  }
  void rmsnorm_forward(float* out, float* rstd, const float* inp, const float* weight,
                       std::int64_t N, int C, float eps) override {
    cuda::rmsnorm_forward(out, rstd, inp, weight, N, C, eps, kStream);
    log_.launched("rmsnorm_forward");
  }
  void rmsnorm_backward(float* dinp, float* dweight, const float* dout, const float* inp,
                        const float* weight, const float* rstd, std::int64_t N, int C,
                        GradMode mode) override {
    float* sums = dweight ? column_scratch(norm_backward_scratch(N, C)) : nullptr;
    if (dweight && sums == nullptr) return;  // logged
    cuda::rmsnorm_backward(dinp, dweight, dout, inp, weight, rstd, N, C, mode, sums, kStream);
    log_.launched("rmsnorm_backward");
  }

  void matmul_forward(float* out, const float* inp, const float* weight, const float* bias,
                      std::int64_t N, int C, int OC) override {
    if (N == 0) return;
    if (precision_ == Precision::kBF16) {
      const void* a = rounded(scratch_inp_, inp, N * C);
      const void* w = rounded(scratch_weight_, weight, std::int64_t{OC} * C);
      if (a && w) linear_forward(out, a, w, bias, N, C, OC, Operands::kBF16);
    } else {
      linear_forward(out, inp, weight, bias, N, C, OC, Operands::kF32);
    }
    log_.launched("matmul_forward");
  }
  void matmul_forward_accumulate(float* out, const float* inp, const float* weight, float scale,
                                 std::int64_t N, int C, int OC) override {
    if (N == 0) return;
    if (precision_ == Precision::kBF16) {
      const void* a = rounded(scratch_inp_, inp, N * C);
      const void* w = rounded(scratch_weight_, weight, std::int64_t{OC} * C);
      if (a && w) product(false, true, N, OC, C, scale, a, C, w, C, 1.0f, out, OC, Operands::kBF16);
    } else {
      product(false, true, N, OC, C, scale, inp, C, weight, C, 1.0f, out, OC, Operands::kF32);
    }
    log_.launched("matmul_forward_accumulate");
  }
  void matmul_backward(float* dinp, float* dweight, float* dbias, const float* dout,
                       const float* inp, const float* weight, float scale, std::int64_t N, int C,
                       int OC, GradMode mode) override {
    if (N == 0) return;
    const float beta = mode == GradMode::kAccumulate ? 1.0f : 0.0f;
    bool dbias_done = false;
    if (precision_ == Precision::kBF16) {
      const void* d = rounded(scratch_dout_, dout, N * OC);
      if (d && dinp) {  // dinp (N, C) = scale · dout (N, OC) · weight (OC, C)
        const void* w = rounded(scratch_weight_, weight, std::int64_t{OC} * C);
        if (w) product(false, false, N, C, OC, scale, d, OC, w, C, beta, dinp, C, Operands::kBF16);
      }
      if (d && dweight) {  // dweight (OC, C) += scale · doutᵀ (OC, N) · inp (N, C)
        const void* a = rounded(scratch_inp_, inp, N * C);
        if (a) product(true, false, OC, C, N, scale, d, OC, a, C, 1.0f, dweight, C, Operands::kBF16);
      }
    } else {
      if (dinp)
        product(false, false, N, C, OC, scale, dout, OC, weight, C, beta, dinp, C, Operands::kF32);
      if (dweight && dbias && scale == 1.0f && !flags_.allow_tf32 && !flags_.products_on_cublas)
        dbias_done = weight_and_bias_gradients(dweight, dbias, dout, inp, N, C, OC);
      if (dweight && !dbias_done)
        product(true, false, OC, C, N, scale, dout, OC, inp, C, 1.0f, dweight, C, Operands::kF32);
    }
    if (dbias && !dbias_done) bias_gradient(dbias, dout, N, OC);  // fp32 in both precisions
    log_.launched("matmul_backward");
  }
  void matmul_forward_bf16_weight(float* out, const float* inp, const std::uint16_t* weight,
                                  const float* bias, std::int64_t N, int C, int OC) override {
    if (N == 0) return;
    const void* a = rounded(scratch_inp_, inp, N * C);
    if (a) linear_forward(out, a, weight, bias, N, C, OC, Operands::kBF16);
    log_.launched("matmul_forward_bf16_weight");
  }
  void matmul_backward_bf16_weight(float* dinp, float* dbias, const float* dout,
                                   const std::uint16_t* weight, float scale, std::int64_t N,
                                   int C, int OC, GradMode mode) override {
    if (N == 0) return;
    if (dinp) {
      const void* d = rounded(scratch_dout_, dout, N * OC);
      if (d)
        product(false, false, N, C, OC, scale, d, OC, weight, C,
                mode == GradMode::kAccumulate ? 1.0f : 0.0f, dinp, C, Operands::kBF16);
    }
    if (dbias) bias_gradient(dbias, dout, N, OC);
    log_.launched("matmul_backward_bf16_weight");
  }

  void attention_forward(float* out, float* probs, const float* q, const float* k, const float* v,
                         const float* prefix_k, const float* prefix_v, const std::int32_t* lengths,
                         int B, int T, int P, int C, int NH, bool causal, int window) override {
    const Heads g(T, P, C, NH);
    for (int h = 0; h < NH; ++h) {  // scaled scores, prefix keys first: (T, S) per sequence
      float* p = probs + h * g.TS;
      if (P > 0)
        gemm_.run_batched(false, true, T, P, g.hs, g.scale, q + h * g.hs, C, g.TC,
                          prefix_k + h * g.hs, C, 0, 0.0f, p, g.S, g.NHTS, B, Operands::kF32);
      gemm_.run_batched(false, true, T, T, g.hs, g.scale, q + h * g.hs, C, g.TC, k + h * g.hs, C,
                        g.TC, 0.0f, p + P, g.S, g.NHTS, B, Operands::kF32);
    }
    attention_softmax(probs, lengths, B, NH, T, P, causal, window, kStream);
    for (int h = 0; h < NH; ++h) {  // out = P[:, :P] prefix_v + P[:, P:] v
      const float* p = probs + h * g.TS;
      if (P > 0)
        gemm_.run_batched(false, false, T, g.hs, P, 1.0f, p, g.S, g.NHTS, prefix_v + h * g.hs, C,
                          0, 0.0f, out + h * g.hs, C, g.TC, B, Operands::kF32);
      gemm_.run_batched(false, false, T, g.hs, T, 1.0f, p + P, g.S, g.NHTS, v + h * g.hs, C, g.TC,
                        P > 0 ? 1.0f : 0.0f, out + h * g.hs, C, g.TC, B, Operands::kF32);
    }
    log_.launched("attention_forward");
  }
  void attention_backward(float* dq, float* dk, float* dv, float* dprefix_k, float* dprefix_v,
                          const float* dout, const float* probs, const float* q, const float* k,
                          const float* v, const float* prefix_k, const float* prefix_v, int B,
                          int T, int P, int C, int NH) override {
    const Heads g(T, P, C, NH);
    // dP, then dS, for every (sequence, head): probs' layout.
    float* ds = static_cast<float*>(scratch_attention_.get(
        static_cast<std::size_t>(B) * g.NHTS * sizeof(float), log_, "cudaMalloc (attention scratch)"));
    if (ds == nullptr) return;
    for (float* dprefix : {dprefix_k, dprefix_v})
      if (dprefix && P > 0) fill_zero(dprefix, static_cast<std::size_t>(P) * C * sizeof(float));
    for (int h = 0; h < NH; ++h) {
      // dP = dout vᵀ (prefix values first); dv = P[:, P:]ᵀ dout
      const float* p = probs + h * g.TS;
      float* d = ds + h * g.TS;
      if (P > 0)
        gemm_.run_batched(false, true, T, P, g.hs, 1.0f, dout + h * g.hs, C, g.TC,
                          prefix_v + h * g.hs, C, 0, 0.0f, d, g.S, g.NHTS, B, Operands::kF32);
      gemm_.run_batched(false, true, T, T, g.hs, 1.0f, dout + h * g.hs, C, g.TC, v + h * g.hs, C,
                        g.TC, 0.0f, d + P, g.S, g.NHTS, B, Operands::kF32);
      gemm_.run_batched(true, false, T, g.hs, T, 1.0f, p + P, g.S, g.NHTS, dout + h * g.hs, C,
                        g.TC, 0.0f, dv + h * g.hs, C, g.TC, B, Operands::kF32);
    }
    if (P > 0 && dprefix_v)  // dprefix_v += P[:, :P]ᵀ dout, sequence by sequence
      for (int b = 0; b < B; ++b)
        gemm_.run_batched(true, false, P, g.hs, T, 1.0f, probs + b * g.NHTS, g.S, g.TS,
                          dout + b * g.TC, C, g.hs, 1.0f, dprefix_v, C, g.hs, NH, Operands::kF32);
    // dS = P ⊙ (dP − Σ_j P dP) / sqrt(hs)
    attention_softmax_backward(ds, probs, std::int64_t{B} * NH * T, g.S, g.scale, kStream);
    for (int h = 0; h < NH; ++h) {
      // dq = dS k (prefix keys included); dk = dS[:, P:]ᵀ q
      const float* d = ds + h * g.TS;
      gemm_.run_batched(false, false, T, g.hs, T, 1.0f, d + P, g.S, g.NHTS, k + h * g.hs, C, g.TC,
                        0.0f, dq + h * g.hs, C, g.TC, B, Operands::kF32);
      if (P > 0)
        gemm_.run_batched(false, false, T, g.hs, P, 1.0f, d, g.S, g.NHTS, prefix_k + h * g.hs, C,
                          0, 1.0f, dq + h * g.hs, C, g.TC, B, Operands::kF32);
      gemm_.run_batched(true, false, T, g.hs, T, 1.0f, d + P, g.S, g.NHTS, q + h * g.hs, C, g.TC,
                        0.0f, dk + h * g.hs, C, g.TC, B, Operands::kF32);
    }
    if (P > 0 && dprefix_k)  // dprefix_k += dS[:, :P]ᵀ q, sequence by sequence
      for (int b = 0; b < B; ++b)
        gemm_.run_batched(true, false, P, g.hs, T, 1.0f, ds + b * g.NHTS, g.S, g.TS, q + b * g.TC,
                          C, g.hs, 1.0f, dprefix_k, C, g.hs, NH, Operands::kF32);
    log_.launched("attention_backward");
  }

  void gelu_forward(float* out, const float* inp, std::int64_t N) override {
    cuda::gelu_forward(out, inp, N, kStream);
    log_.launched("gelu_forward");
  }
  void gelu_backward(float* dinp, const float* inp, const float* dout, std::int64_t N) override {
    cuda::gelu_backward(dinp, inp, dout, N, kStream);
    log_.launched("gelu_backward");
  }
  void gelu_erf_forward(float* out, const float* inp, std::int64_t N) override {
    cuda::gelu_erf_forward(out, inp, N, kStream);
    log_.launched("gelu_erf_forward");
  }
  void gelu_erf_backward(float* dinp, const float* inp, const float* dout,
                         std::int64_t N) override {
    cuda::gelu_erf_backward(dinp, inp, dout, N, kStream);
    log_.launched("gelu_erf_backward");
  }
  void tanh_forward(float* out, const float* inp, std::int64_t N) override {
    cuda::tanh_forward(out, inp, N, kStream);
    log_.launched("tanh_forward");
  }
  void tanh_backward(float* dinp, const float* out, const float* dout, std::int64_t N) override {
    cuda::tanh_backward(dinp, out, dout, N, kStream);
    log_.launched("tanh_backward");
  }
  void swiglu_forward(float* out, const float* gate, const float* up, std::int64_t N) override {
    cuda::swiglu_forward(out, gate, up, N, kStream);
    log_.launched("swiglu_forward");
  }
  void swiglu_backward(float* dgate, float* dup, const float* dout, const float* gate,
                       const float* up, std::int64_t N) override {
    cuda::swiglu_backward(dgate, dup, dout, gate, up, N, kStream);
    log_.launched("swiglu_backward");
  }

  void residual_forward(float* out, const float* inp1, const float* inp2,
                        std::int64_t N) override {
    cuda::residual_forward(out, inp1, inp2, N, kStream);
    log_.launched("residual_forward");
  }
  void copy(float* dst, const float* src, std::int64_t N) override {
    if (N <= 0) return;
    log_.check(cudaMemcpyAsync(dst, src, static_cast<std::size_t>(N) * sizeof(float),
                               cudaMemcpyDeviceToDevice, kStream),
               "copy");
  }
  void add_inplace(float* dst, const float* src, float scale, std::int64_t N) override {
    cuda::add_inplace(dst, src, scale, N, kStream);
    log_.launched("add_inplace");
  }
  void scale_inplace(float* x, float scale, std::int64_t N) override {
    cuda::scale_inplace(x, scale, N, kStream);
    log_.launched("scale_inplace");
  }
  double squared_norm(const float* x, std::int64_t N) override {
    if (reduction_ == nullptr) return 0.0;
    double* result = reduction_ + kNormBlocks;
    cuda::squared_norm(result, reduction_, x, N, kStream);
    log_.launched("squared_norm");
    double sum = 0.0;
    log_.check(cudaMemcpy(&sum, result, sizeof sum, cudaMemcpyDeviceToHost), "squared_norm");
    return sum;
  }

  void squared_norm_into(double* sum, const float* x, std::int64_t N) override {
    if (reduction_ == nullptr) return;                   // its allocation failed: logged
    cuda::squared_norm(sum, reduction_, x, N, kStream);  // the partials reused in stream order
    log_.launched("squared_norm_into");
  }
  void clip_to_global_norm(float* x, std::int64_t N, const double* squared_norms, int count,
                           float max_norm) override {
    cuda::clip_to_global_norm(x, N, squared_norms, count, max_norm, kStream);
    log_.launched("clip_to_global_norm");
  }
  void scale_columns(float* out, const float* inp, const float* scale, const float* divisor,
                     std::int64_t N, int C, bool accumulate) override {
    cuda::scale_columns(out, inp, scale, divisor, N, C, accumulate, kStream);
    log_.launched("scale_columns");
  }
  void scale_columns_backward(float* dinp, float* dscale, const float* dout, const float* inp,
                              const float* scale, const float* divisor, std::int64_t N,
                              int C) override {
    float* sums = dscale ? column_scratch(cuda::scale_columns_backward_scratch(N, C)) : nullptr;
    if (dscale && sums == nullptr) return;  // logged
    cuda::scale_columns_backward(dinp, dscale, dout, inp, scale, divisor, N, C, sums, kStream);
    log_.launched("scale_columns_backward");
  }
  void row_norms(float* out, const float* x, std::int64_t N, int C) override {
    cuda::row_norms(out, x, N, C, kStream);
    log_.launched("row_norms");
  }

  std::int64_t cross_entropy_forward(float* losses, float* probs, const float* logits,
                                     const std::int32_t* targets, std::int64_t N,
                                     int V) override {
    if (reduction_ == nullptr) return 0;
    auto* counted = reinterpret_cast<unsigned long long*>(reduction_ + kNormBlocks + 1);
    log_.check(cuda::cross_entropy_forward(losses, probs, counted, logits, targets, N, V, kStream),
               "cross_entropy_forward (cudaMemsetAsync)");
    log_.launched("cross_entropy_forward");
    unsigned long long host = 0;
    log_.check(cudaMemcpy(&host, counted, sizeof host, cudaMemcpyDeviceToHost),
               "cross_entropy_forward");
    return static_cast<std::int64_t>(host);
  }
  void cross_entropy_backward(float* dlogits, const float* probs, const std::int32_t* targets,
                              float scale, std::int64_t N, int V) override {
    cuda::cross_entropy_backward(dlogits, probs, targets, scale, N, V, kStream);
    log_.launched("cross_entropy_backward");
  }
  void cross_entropy_backward_weighted(float* dlogits, const float* probs,
                                       const std::int32_t* targets, const float* weights,
                                       float scale, std::int64_t N, int V) override {
    cuda::cross_entropy_backward_weighted(dlogits, probs, targets, weights, scale, N, V, kStream);
    log_.launched("cross_entropy_backward_weighted");
  }
  void bce_with_logits_forward(float* losses, float* probs, const float* logits,
                               const float* targets, std::int64_t N, int K) override {
    cuda::bce_with_logits_forward(losses, probs, logits, targets, N, K, kStream);
    log_.launched("bce_with_logits_forward");
  }
  void bce_with_logits_backward(float* dlogits, const float* probs, const float* targets,
                                float scale, std::int64_t N, int K) override {
    cuda::bce_with_logits_backward(dlogits, probs, targets, scale, N, K, kStream);
    log_.launched("bce_with_logits_backward");
  }

  void pool_forward(float* out, const float* inp, const std::int32_t* lengths, int B, int S,
                    int offset, int C, PoolMode mode) override {
    cuda::pool_forward(out, inp, lengths, B, S, offset, C, mode, kStream);
    log_.launched("pool_forward");
  }
  void pool_backward(float* dinp, const float* dout, const std::int32_t* lengths, int B, int S,
                     int offset, int C, PoolMode mode) override {
    cuda::pool_backward(dinp, dout, lengths, B, S, offset, C, mode, kStream);
    log_.launched("pool_backward");
  }

  void dropout_forward(float* out, float* mask, const float* inp, std::int64_t N, float p,
                       std::uint64_t seed, std::uint64_t stream, std::uint64_t first) override {
    cuda::dropout_forward(out, mask, inp, N, p, seed, stream, first, kStream);
    log_.launched("dropout_forward");
  }
  void dropout_backward(float* dinp, const float* dout, const float* mask,
                        std::int64_t N) override {
    cuda::dropout_backward(dinp, dout, mask, N, kStream);
    log_.launched("dropout_backward");
  }

  void adamw_update(float* param, const float* grad, float* m, float* v, std::int64_t n,
                    float lr, float beta1, float beta2, float eps, float weight_decay,
                    int step) override {
    cuda::adamw_update(param, grad, m, v, n, lr, beta1, beta2, eps, weight_decay, step, kStream);
    log_.launched("adamw_update");
  }
  void sgd_update(float* param, const float* grad, float* velocity, std::int64_t n, float lr,
                  float momentum, float weight_decay) override {
    cuda::sgd_update(param, grad, velocity, n, lr, momentum, weight_decay, kStream);
    log_.launched("sgd_update");
  }

  void rope_forward(float* out, const float* inp, int B, int T, int NH, int D, int pos0,
                    float theta, float position_scale) override {
    cuda::rope_forward(out, inp, B, T, NH, D, pos0, theta, position_scale, kStream);
    log_.launched("rope_forward");
  }
  void rope_backward(float* dinp, const float* dout, int B, int T, int NH, int D, int pos0,
                     float theta, float position_scale) override {
    cuda::rope_backward(dinp, dout, B, T, NH, D, pos0, theta, position_scale, kStream);
    log_.launched("rope_backward");
  }
  void repeat_kv_forward(float* out, const float* inp, std::int64_t N, int NKV, int groups,
                         int D) override {
    cuda::repeat_kv_forward(out, inp, N, NKV, groups, D, kStream);
    log_.launched("repeat_kv_forward");
  }
  void repeat_kv_backward(float* dinp, const float* dout, std::int64_t N, int NKV, int groups,
                          int D) override {
    cuda::repeat_kv_backward(dinp, dout, N, NKV, groups, D, kStream);
    log_.launched("repeat_kv_backward");
  }

 private:
  // Attention's sizes and strides (elements), 64-bit: B·NH·T·S overflows int early.
  struct Heads {
    Heads(int T, int P, int C, int NH)
        : hs(C / NH),
          S(P + T),
          TC(std::int64_t{T} * C),
          TS(std::int64_t{T} * (P + T)),
          NHTS(std::int64_t{NH} * T * (P + T)),
          scale(1.0f / std::sqrt(static_cast<float>(C / NH))) {}
    int hs, S;
    std::int64_t TC, TS, NHTS;
    float scale;
  };

  // c (M, N) = alpha · op(a) op(b) + beta · c on cuBLASLt (lt_matmul.h), or on
  // cublasGemmEx when cuBLASLt has no algorithm for the shape (or flags_ say so).
  void product(bool trans_a, bool trans_b, std::int64_t M, std::int64_t N, std::int64_t K,
               float alpha, const void* a, std::int64_t lda, const void* b, std::int64_t ldb,
               float beta, float* c, std::int64_t ldc, Operands type) {
    if (!flags_.products_on_cublas &&
        lt_.run(LtProduct{trans_a, trans_b, M, N, K, lda, ldb, ldc, type, Epilogue::kNone}, alpha,
                a, b, beta, c) != LtOutcome::kNoAlgorithm)
      return;  // issued, or failed (logged)
    gemm_.run(trans_a, trans_b, M, N, K, alpha, a, lda, b, ldb, beta, c, ldc, type);
  }

  // out (N, OC) = a (N, C) · wᵀ + bias: the bias added in cuBLASLt's epilogue, or, where
  // it has none for this shape, broadcast into `out` first and the product added onto it.
  void linear_forward(float* out, const void* a, const void* w, const float* bias,
                      std::int64_t N, int C, int OC, Operands type) {
    if (bias) {
      const LtProduct p{false, true, N, OC, C, C, C, OC, type, Epilogue::kBias};
      if (!flags_.products_on_cublas) {
        const LtOutcome fused = lt_.run(p, 1.0f, a, w, 0.0f, out, bias);
        if (fused != LtOutcome::kNoAlgorithm) return;  // issued, or failed (logged)
      }
      fill_rows(out, bias, N, OC, kStream);
    }
    product(false, true, N, OC, C, 1.0f, a, C, w, C, bias ? 1.0f : 0.0f, out, OC, type);
  }

  // fp32 only, scale 1, no TF32: dweight (OC, C) += doutᵀ · inp with the bias gradient's
  // column sums of dout taken by the same product (the BGRADB epilogue, which overwrites
  // its vector: into scratch, then added to dbias, which accumulates). The conditions
  // keep the CPU contract: in bf16 the epilogue would sum the bf16-rounded dout, and it
  // is not documented whether the sums take alpha or TF32's rounding. False when the
  // epilogue has no algorithm here: nothing ran.
  bool weight_and_bias_gradients(float* dweight, float* dbias, const float* dout,
                                 const float* inp, std::int64_t N, int C, int OC) {
    auto* sums = static_cast<float*>(scratch_bias_grad_.get(
        static_cast<std::size_t>(OC) * sizeof(float), log_, "cudaMalloc (bias gradient)"));
    if (sums == nullptr) return false;
    const LtProduct p{true, false, OC, C, N, OC, C, C, Operands::kF32, Epilogue::kRowSumsOfA};
    const LtOutcome fused = lt_.run(p, 1.0f, dout, inp, 1.0f, dweight, nullptr, sums);
    if (fused == LtOutcome::kNoAlgorithm) return false;
    if (fused == LtOutcome::kIssued) cuda::add_inplace(dbias, sums, 1.0f, OC, kStream);
    return true;  // issued, or failed (logged: the step fails on it)
  }

  // Scratch of `floats` floats for column sums (column_sums.cuh), or null (logged).
  float* column_scratch(std::int64_t floats) {
    return static_cast<float*>(scratch_column_sums_.get(
        static_cast<std::size_t>(floats) * sizeof(float), log_, "cudaMalloc (column sums)"));
  }

  // dbias (OC) += the column sums of dout (N, OC).
  void bias_gradient(float* dbias, const float* dout, std::int64_t N, int OC) {
    if (float* sums = column_scratch(bias_backward_scratch(N, OC)))
      bias_backward(dbias, dout, N, OC, sums, kStream);
  }

  // src rounded to bf16 in `scratch`, or null (the failure logged).
  const std::uint16_t* rounded(DeviceScratch& scratch, const float* src, std::int64_t n) {
    auto* dst = static_cast<std::uint16_t*>(
        scratch.get(static_cast<std::size_t>(n) * sizeof(std::uint16_t), log_, "cudaMalloc (bf16 operand)"));
    if (dst) round_to_bf16(dst, src, n, kStream);
    return dst;
  }

  Precision precision_;
  BackendFlags flags_;
  ErrorLog log_;  // before gemm_ and lt_, which report into it
  Gemm gemm_;     // attention's strided-batched products (gemm.h)
  LtMatmul lt_;   // the linear layers' products (lt_matmul.h)
  DeviceMemory memory_;  // before the scratch buffers, which take from it
  DeviceScratch scratch_inp_, scratch_weight_, scratch_dout_, scratch_attention_,
      scratch_bias_grad_, scratch_column_sums_, scratch_embedding_, reduction_scratch_;
  double* reduction_ = nullptr;
};

}  // namespace

std::unique_ptr<Backend> make_backend(Precision precision, const BackendFlags& flags,
                                      std::string* why) {
  auto backend = std::make_unique<CudaBackend>(precision, flags);
  if (!backend->error().empty()) {
    *why = backend->error();
    return nullptr;
  }
  return backend;
}

}  // namespace scion::runtime::cuda
