// HostFaultBackend: a test-only Backend whose memory the host cannot touch, so that any
// place where model code dereferences backend memory on the host crashes (SIGSEGV)
// instead of silently working, as it would on the CPU backend.
//
// Every allocation is a memfd mapped twice: once PROT_NONE, the address handed out as the
// "device pointer", and once read-write, the shadow its operations work on. Each
// operation translates its pointers to the shadow (by offset within the allocation) and
// calls the CPU backend's operation of the same name; copy_to_device/copy_to_host and
// fill_zero translate too. So values are the CPU backend's bit for bit, while host code
// reading or writing a device pointer faults. A pointer an operation receives that lies
// in no allocation of this backend (host memory passed where backend memory belongs,
// e.g. token ids not uploaded) aborts with a message. It also counts the operations that
// hand a value to the host (copy_to_host, squared_norm, cross_entropy_forward): on a GPU
// each one waits for the device. Not thread-safe, like any Backend.
#pragma once

#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <string>

#include "runtime/backend.h"

namespace scion::test {

class HostFaultBackend final : public runtime::Backend {
 public:
  explicit HostFaultBackend(const runtime::CpuBackendOptions& options)
      : cpu_(runtime::make_cpu_backend(options)) {}
  ~HostFaultBackend() override {
    for (const auto& [device, mapping] : mappings_) unmap(device, mapping);
  }

  // How many allocations are live (each one two mappings).
  std::size_t live_allocations() const { return mappings_.size(); }
  // How many operations so far returned a value to the host (each a device wait on a GPU).
  std::size_t host_reads() const { return host_reads_; }

  std::string name() const override { return "host-fault(" + cpu_->name() + ")"; }
  runtime::Device device() const override { return runtime::Device::kCuda; }
  runtime::Precision precision() const override { return cpu_->precision(); }
  runtime::Precision attention_precision() const override { return cpu_->attention_precision(); }

  void* allocate(std::size_t bytes) override {
    const std::size_t page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
    const std::size_t size = bytes == 0 ? page : (bytes + page - 1) / page * page;
    const int fd = memfd_create("scion-host-fault", MFD_CLOEXEC);
    if (fd < 0) return nullptr;
    void* device = MAP_FAILED;
    void* shadow = MAP_FAILED;
    if (ftruncate(fd, static_cast<off_t>(size)) == 0) {
      device = mmap(nullptr, size, PROT_NONE, MAP_SHARED, fd, 0);
      shadow = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    }
    close(fd);
    if (device == MAP_FAILED || shadow == MAP_FAILED) {
      if (device != MAP_FAILED) munmap(device, size);
      if (shadow != MAP_FAILED) munmap(shadow, size);
      return nullptr;
    }
    mappings_[reinterpret_cast<std::uintptr_t>(device)] = {size, static_cast<std::byte*>(shadow)};
    return device;
  }
  void deallocate(void* data) override {
    auto it = mappings_.find(reinterpret_cast<std::uintptr_t>(data));
    if (it == mappings_.end()) fail("deallocate", data);
    unmap(it->first, it->second);
    mappings_.erase(it);
  }
  void fill_zero(void* data, std::size_t bytes) override { std::memset(h(data), 0, bytes); }
  void copy_to_device(void* dst, const void* host_src, std::size_t bytes) override {
    std::memcpy(h(dst), host_src, bytes);
  }
  void copy_to_host(void* host_dst, const void* src, std::size_t bytes) override {
    ++host_reads_;
    std::memcpy(host_dst, h(src), bytes);
  }

  void embedding_forward(float* out, const std::int32_t* inp, const float* wte, const float* wpe,
                         const float* prompt, int B, int T, int P, int C) override {
    cpu_->embedding_forward(h(out), h(inp), h(wte), h(wpe), h(prompt), B, T, P, C);
  }
  void embedding_backward(float* dwte, float* dwpe, float* dprompt, const float* dout,
                          const std::int32_t* inp, int B, int T, int P, int C) override {
    cpu_->embedding_backward(h(dwte), h(dwpe), h(dprompt), h(dout), h(inp), B, T, P, C);
  }
  void layernorm_forward(float* out, float* mean, float* rstd, const float* inp,
                         const float* weight, const float* bias, std::int64_t N, int C) override {
    cpu_->layernorm_forward(h(out), h(mean), h(rstd), h(inp), h(weight), h(bias), N, C);
  }
  void layernorm_backward(float* dinp, float* dweight, float* dbias, const float* dout,
                          const float* inp, const float* weight, const float* mean,
                          const float* rstd, std::int64_t N, int C,
                          runtime::GradMode mode) override {
    cpu_->layernorm_backward(h(dinp), h(dweight), h(dbias), h(dout), h(inp), h(weight), h(mean),
                             h(rstd), N, C, mode);
  }
  void matmul_forward(float* out, const float* inp, const float* weight, const float* bias,
                      std::int64_t N, int C, int OC) override {
    cpu_->matmul_forward(h(out), h(inp), h(weight), h(bias), N, C, OC);
  }
  void matmul_forward_accumulate(float* out, const float* inp, const float* weight, float scale,
                                 std::int64_t N, int C, int OC) override {
    cpu_->matmul_forward_accumulate(h(out), h(inp), h(weight), scale, N, C, OC);
  }
  void matmul_backward(float* dinp, float* dweight, float* dbias, const float* dout,
                       const float* inp, const float* weight, float scale, std::int64_t N, int C,
                       int OC, runtime::GradMode mode) override {
    cpu_->matmul_backward(h(dinp), h(dweight), h(dbias), h(dout), h(inp), h(weight), scale, N, C,
                          OC, mode);
  }
  void matmul_forward_bf16_weight(float* out, const float* inp, const std::uint16_t* weight,
                                  const float* bias, std::int64_t N, int C, int OC) override {
    cpu_->matmul_forward_bf16_weight(h(out), h(inp), h(weight), h(bias), N, C, OC);
  }
  void matmul_backward_bf16_weight(float* dinp, float* dbias, const float* dout,
                                   const std::uint16_t* weight, float scale, std::int64_t N, int C,
                                   int OC, runtime::GradMode mode) override {
    cpu_->matmul_backward_bf16_weight(h(dinp), h(dbias), h(dout), h(weight), scale, N, C, OC, mode);
  }
  void attention_forward(float* out, float* probs, const float* q, const float* k, const float* v,
                         const float* prefix_k, const float* prefix_v, const std::int32_t* lengths,
                         int B, int T, int P, int C, int NH, bool causal, int window) override {
    cpu_->attention_forward(h(out), h(probs), h(q), h(k), h(v), h(prefix_k), h(prefix_v),
                            h(lengths), B, T, P, C, NH, causal, window);
  }
  void attention_backward(float* dq, float* dk, float* dv, float* dprefix_k, float* dprefix_v,
                          const float* dout, const float* probs, const float* q, const float* k,
                          const float* v, const float* prefix_k, const float* prefix_v, int B,
                          int T, int P, int C, int NH) override {
    cpu_->attention_backward(h(dq), h(dk), h(dv), h(dprefix_k), h(dprefix_v), h(dout), h(probs),
                             h(q), h(k), h(v), h(prefix_k), h(prefix_v), B, T, P, C, NH);
  }
  void gelu_forward(float* out, const float* inp, std::int64_t N) override {
    cpu_->gelu_forward(h(out), h(inp), N);
  }
  void gelu_backward(float* dinp, const float* inp, const float* dout, std::int64_t N) override {
    cpu_->gelu_backward(h(dinp), h(inp), h(dout), N);
  }
  void residual_forward(float* out, const float* a, const float* b, std::int64_t N) override {
    cpu_->residual_forward(h(out), h(a), h(b), N);
  }
  void copy(float* dst, const float* src, std::int64_t N) override {
    cpu_->copy(h(dst), h(src), N);
  }
  void add_inplace(float* dst, const float* src, float scale, std::int64_t N) override {
    cpu_->add_inplace(h(dst), h(src), scale, N);
  }
  void scale_inplace(float* x, float scale, std::int64_t N) override {
    cpu_->scale_inplace(h(x), scale, N);
  }
  double squared_norm(const float* x, std::int64_t N) override {
    ++host_reads_;
    return cpu_->squared_norm(h(x), N);
  }
  void squared_norm_into(double* sum, const float* x, std::int64_t N) override {
    cpu_->squared_norm_into(h(sum), h(x), N);
  }
  void clip_to_global_norm(float* x, std::int64_t N, const double* squared_norms, int count,
                           float max_norm) override {
    cpu_->clip_to_global_norm(h(x), N, h(squared_norms), count, max_norm);
  }
  std::int64_t cross_entropy_forward(float* losses, float* probs, const float* logits,
                                     const std::int32_t* targets, std::int64_t N, int V) override {
    ++host_reads_;
    return cpu_->cross_entropy_forward(h(losses), h(probs), h(logits), h(targets), N, V);
  }
  void cross_entropy_backward(float* dlogits, const float* probs, const std::int32_t* targets,
                              float scale, std::int64_t N, int V) override {
    cpu_->cross_entropy_backward(h(dlogits), h(probs), h(targets), scale, N, V);
  }
  void cross_entropy_backward_weighted(float* dlogits, const float* probs,
                                       const std::int32_t* targets, const float* weights,
                                       float scale, std::int64_t N, int V) override {
    cpu_->cross_entropy_backward_weighted(h(dlogits), h(probs), h(targets), h(weights), scale, N,
                                          V);
  }
  void bce_with_logits_forward(float* losses, float* probs, const float* logits,
                               const float* targets, std::int64_t N, int K) override {
    cpu_->bce_with_logits_forward(h(losses), h(probs), h(logits), h(targets), N, K);
  }
  void bce_with_logits_backward(float* dlogits, const float* probs, const float* targets,
                                float scale, std::int64_t N, int K) override {
    cpu_->bce_with_logits_backward(h(dlogits), h(probs), h(targets), scale, N, K);
  }
  void pool_forward(float* out, const float* inp, const std::int32_t* lengths, int B, int S,
                    int offset, int C, runtime::PoolMode mode) override {
    cpu_->pool_forward(h(out), h(inp), h(lengths), B, S, offset, C, mode);
  }
  void pool_backward(float* dinp, const float* dout, const std::int32_t* lengths, int B, int S,
                     int offset, int C, runtime::PoolMode mode) override {
    cpu_->pool_backward(h(dinp), h(dout), h(lengths), B, S, offset, C, mode);
  }
  void dropout_forward(float* out, float* mask, const float* inp, std::int64_t N, float p,
                       std::uint64_t seed, std::uint64_t stream, std::uint64_t first) override {
    cpu_->dropout_forward(h(out), h(mask), h(inp), N, p, seed, stream, first);
  }
  void dropout_backward(float* dinp, const float* dout, const float* mask,
                        std::int64_t N) override {
    cpu_->dropout_backward(h(dinp), h(dout), h(mask), N);
  }
  void adamw_update(float* param, const float* grad, float* m, float* v, std::int64_t n, float lr,
                    float beta1, float beta2, float eps, float weight_decay, int step) override {
    cpu_->adamw_update(h(param), h(grad), h(m), h(v), n, lr, beta1, beta2, eps, weight_decay, step);
  }
  void sgd_update(float* param, const float* grad, float* velocity, std::int64_t n, float lr,
                  float momentum, float weight_decay) override {
    cpu_->sgd_update(h(param), h(grad), h(velocity), n, lr, momentum, weight_decay);
  }
  void layernorm_forward_eps(float* out, float* mean, float* rstd, const float* inp,
                             const float* weight, const float* bias, std::int64_t N, int C,
                             float eps) override {
    cpu_->layernorm_forward_eps(h(out), h(mean), h(rstd), h(inp), h(weight), h(bias), N, C, eps);
  }
  void gelu_erf_forward(float* out, const float* inp, std::int64_t N) override {
    cpu_->gelu_erf_forward(h(out), h(inp), N);
  }
  void gelu_erf_backward(float* dinp, const float* inp, const float* dout,
                         std::int64_t N) override {
    cpu_->gelu_erf_backward(h(dinp), h(inp), h(dout), N);
  }
  void tanh_forward(float* out, const float* inp, std::int64_t N) override {
    cpu_->tanh_forward(h(out), h(inp), N);
  }
  void tanh_backward(float* dinp, const float* out, const float* dout, std::int64_t N) override {
    cpu_->tanh_backward(h(dinp), h(out), h(dout), N);
  }
  void rmsnorm_forward(float* out, float* rstd, const float* inp, const float* weight,
                       std::int64_t N, int C, float eps) override {
    cpu_->rmsnorm_forward(h(out), h(rstd), h(inp), h(weight), N, C, eps);
  }
  void rmsnorm_backward(float* dinp, float* dweight, const float* dout, const float* inp,
                        const float* weight, const float* rstd, std::int64_t N, int C,
                        runtime::GradMode mode) override {
    cpu_->rmsnorm_backward(h(dinp), h(dweight), h(dout), h(inp), h(weight), h(rstd), N, C, mode);
  }
  void rope_forward(float* out, const float* inp, int B, int T, int NH, int D, int pos0,
                    float theta, float position_scale) override {
    cpu_->rope_forward(h(out), h(inp), B, T, NH, D, pos0, theta, position_scale);
  }
  void rope_backward(float* dinp, const float* dout, int B, int T, int NH, int D, int pos0,
                     float theta, float position_scale) override {
    cpu_->rope_backward(h(dinp), h(dout), B, T, NH, D, pos0, theta, position_scale);
  }
  void scale_columns(float* out, const float* inp, const float* scale, const float* divisor,
                     std::int64_t N, int C, bool accumulate) override {
    cpu_->scale_columns(h(out), h(inp), h(scale), h(divisor), N, C, accumulate);
  }
  void scale_columns_backward(float* dinp, float* dscale, const float* dout, const float* inp,
                              const float* scale, const float* divisor, std::int64_t N,
                              int C) override {
    cpu_->scale_columns_backward(h(dinp), h(dscale), h(dout), h(inp), h(scale), h(divisor), N, C);
  }
  void row_norms(float* out, const float* x, std::int64_t N, int C) override {
    cpu_->row_norms(h(out), h(x), N, C);
  }
  void swiglu_forward(float* out, const float* gate, const float* up, std::int64_t N) override {
    cpu_->swiglu_forward(h(out), h(gate), h(up), N);
  }
  void swiglu_backward(float* dgate, float* dup, const float* dout, const float* gate,
                       const float* up, std::int64_t N) override {
    cpu_->swiglu_backward(h(dgate), h(dup), h(dout), h(gate), h(up), N);
  }
  void repeat_kv_forward(float* out, const float* inp, std::int64_t N, int NKV, int groups,
                         int D) override {
    cpu_->repeat_kv_forward(h(out), h(inp), N, NKV, groups, D);
  }
  void repeat_kv_backward(float* dinp, const float* dout, std::int64_t N, int NKV, int groups,
                          int D) override {
    cpu_->repeat_kv_backward(h(dinp), h(dout), N, NKV, groups, D);
  }

 private:
  struct Mapping {
    std::size_t bytes = 0;
    std::byte* shadow = nullptr;
  };

  [[noreturn]] static void fail(const char* what, const void* p) {
    std::fprintf(stderr,
                 "HostFaultBackend: %s got %p, which no allocation of this backend holds "
                 "(host memory where backend memory belongs)\n",
                 what, p);
    std::abort();
  }
  static void unmap(std::uintptr_t device, const Mapping& mapping) {
    munmap(reinterpret_cast<void*>(device), mapping.bytes);
    munmap(mapping.shadow, mapping.bytes);
  }

  // The shadow address of a device pointer (null stays null). A pointer one past the end
  // of an allocation is allowed, as empty ranges may point there.
  template <typename T>
  T* h(T* p) const {
    if (p == nullptr) return nullptr;
    const auto address = reinterpret_cast<std::uintptr_t>(p);
    auto it = mappings_.upper_bound(address);
    if (it == mappings_.begin()) fail("an operation", p);
    --it;
    const std::uintptr_t offset = address - it->first;
    if (offset > it->second.bytes) fail("an operation", p);
    return reinterpret_cast<T*>(it->second.shadow + offset);
  }

  std::unique_ptr<runtime::Backend> cpu_;
  std::map<std::uintptr_t, Mapping> mappings_;  // by device address
  std::size_t host_reads_ = 0;
};

}  // namespace scion::test
