#include "runtime/profiling_backend.h"

#include <utility>

namespace scion::runtime {
namespace {

class ProfilingBackend final : public Backend {
 public:
  ProfilingBackend(std::unique_ptr<Backend> inner, OpProfile& profile)
      : inner_(std::move(inner)),
        profile_(profile),
        // A device runs operations asynchronously: each is waited for, so that its time is
        // the device's and not the host's to issue it (op_profile.h).
        wait_per_operation_(inner_->device() != Device::kCpu) {
    if (wait_per_operation_) profile_.waited_per_operation = true;
  }

  // Times its scope as one class of operation; on a device it waits for the operation first.
  class OpTimer {
   public:
    OpTimer(ProfilingBackend& backend, OpClass op_class)
        : backend_(backend), timer_(&backend.profile_, op_class) {}
    ~OpTimer() {
      if (backend_.wait_per_operation_) backend_.inner_->synchronize();
    }
    OpTimer(const OpTimer&) = delete;
    OpTimer& operator=(const OpTimer&) = delete;

   private:
    ProfilingBackend& backend_;
    ScopedOpTimer timer_;  // destroyed after the wait in ~OpTimer, so the wait is timed
  };

  std::string name() const override { return inner_->name(); }
  Device device() const override { return inner_->device(); }
  Precision precision() const override { return inner_->precision(); }
  Precision attention_precision() const override { return inner_->attention_precision(); }
  std::string error() const override { return inner_->error(); }
  void synchronize() override { inner_->synchronize(); }
  void* allocate(std::size_t bytes) override {
    OpTimer timer(*this, OpClass::kTransfers);
    return inner_->allocate(bytes);
  }
  void deallocate(void* data) override {
    OpTimer timer(*this, OpClass::kTransfers);
    inner_->deallocate(data);
  }
  void* allocate_zeroed(std::size_t bytes) override {
    OpTimer timer(*this, OpClass::kTransfers);
    return inner_->allocate_zeroed(bytes);
  }
  void fill_zero(void* data, std::size_t bytes) override {
    OpTimer timer(*this, OpClass::kTransfers);
    inner_->fill_zero(data, bytes);
  }
  bool host_addressable() const override { return inner_->host_addressable(); }
  void copy_to_device(void* dst, const void* host_src, std::size_t bytes) override {
    OpTimer timer(*this, OpClass::kTransfers);
    inner_->copy_to_device(dst, host_src, bytes);
  }
  void copy_to_host(void* host_dst, const void* src, std::size_t bytes) override {
    OpTimer timer(*this, OpClass::kTransfers);
    inner_->copy_to_host(host_dst, src, bytes);
  }
  void embedding_forward(float* out, const std::int32_t* inp, const float* wte, const float* wpe,
                         const float* prompt, int B, int T, int P, int C) override {
    OpTimer timer(*this, OpClass::kEmbeddings);
    inner_->embedding_forward(out, inp, wte, wpe, prompt, B, T, P, C);
  }
  void embedding_backward(float* dwte, float* dwpe, float* dprompt, const float* dout,
                          const std::int32_t* inp, int B, int T, int P, int C) override {
    OpTimer timer(*this, OpClass::kEmbeddings);
    inner_->embedding_backward(dwte, dwpe, dprompt, dout, inp, B, T, P, C);
  }
  void layernorm_forward(float* out, float* mean, float* rstd, const float* inp,
                         const float* weight, const float* bias, std::int64_t N, int C) override {
    OpTimer timer(*this, OpClass::kNorms);
    inner_->layernorm_forward(out, mean, rstd, inp, weight, bias, N, C);
  }
  void layernorm_backward(float* dinp, float* dweight, float* dbias, const float* dout,
                          const float* inp, const float* weight, const float* mean,
                          const float* rstd, std::int64_t N, int C, GradMode mode) override {
    OpTimer timer(*this, OpClass::kNorms);
    inner_->layernorm_backward(dinp, dweight, dbias, dout, inp, weight, mean, rstd, N, C, mode);
  }
  void matmul_forward(float* out, const float* inp, const float* weight, const float* bias,
                      std::int64_t N, int C, int OC) override {
    OpTimer timer(*this, OpClass::kProducts);
    inner_->matmul_forward(out, inp, weight, bias, N, C, OC);
  }
  void matmul_forward_accumulate(float* out, const float* inp, const float* weight, float scale,
                                 std::int64_t N, int C, int OC) override {
    OpTimer timer(*this, OpClass::kProducts);
    inner_->matmul_forward_accumulate(out, inp, weight, scale, N, C, OC);
  }
  void matmul_backward(float* dinp, float* dweight, float* dbias, const float* dout,
                       const float* inp, const float* weight, float scale, std::int64_t N, int C,
                       int OC, GradMode mode) override {
    OpTimer timer(*this, OpClass::kProducts);
    inner_->matmul_backward(dinp, dweight, dbias, dout, inp, weight, scale, N, C, OC, mode);
  }
  void matmul_forward_bf16_weight(float* out, const float* inp, const std::uint16_t* weight,
                                  const float* bias, std::int64_t N, int C, int OC) override {
    OpTimer timer(*this, OpClass::kProducts);
    inner_->matmul_forward_bf16_weight(out, inp, weight, bias, N, C, OC);
  }
  void matmul_backward_bf16_weight(float* dinp, float* dbias, const float* dout,
                                   const std::uint16_t* weight, float scale, std::int64_t N, int C,
                                   int OC, GradMode mode) override {
    OpTimer timer(*this, OpClass::kProducts);
    inner_->matmul_backward_bf16_weight(dinp, dbias, dout, weight, scale, N, C, OC, mode);
  }
  void attention_forward(float* out, float* probs, const float* q, const float* k, const float* v,
                         const float* prefix_k, const float* prefix_v, const std::int32_t* lengths,
                         int B, int T, int P, int C, int NH, bool causal, int window) override {
    OpTimer timer(*this, OpClass::kAttention);
    inner_->attention_forward(out, probs, q, k, v, prefix_k, prefix_v, lengths, B, T, P, C, NH,
                              causal, window);
  }
  void attention_backward(float* dq, float* dk, float* dv, float* dprefix_k, float* dprefix_v,
                          const float* dout, const float* probs, const float* q, const float* k,
                          const float* v, const float* prefix_k, const float* prefix_v, int B,
                          int T, int P, int C, int NH) override {
    OpTimer timer(*this, OpClass::kAttention);
    inner_->attention_backward(dq, dk, dv, dprefix_k, dprefix_v, dout, probs, q, k, v, prefix_k,
                               prefix_v, B, T, P, C, NH);
  }
  void gelu_forward(float* out, const float* inp, std::int64_t N) override {
    OpTimer timer(*this, OpClass::kActivations);
    inner_->gelu_forward(out, inp, N);
  }
  void gelu_backward(float* dinp, const float* inp, const float* dout, std::int64_t N) override {
    OpTimer timer(*this, OpClass::kActivations);
    inner_->gelu_backward(dinp, inp, dout, N);
  }
  void residual_forward(float* out, const float* inp1, const float* inp2, std::int64_t N) override {
    OpTimer timer(*this, OpClass::kElementwise);
    inner_->residual_forward(out, inp1, inp2, N);
  }
  void copy(float* dst, const float* src, std::int64_t N) override {
    OpTimer timer(*this, OpClass::kElementwise);
    inner_->copy(dst, src, N);
  }
  void add_inplace(float* dst, const float* src, float scale, std::int64_t N) override {
    OpTimer timer(*this, OpClass::kElementwise);
    inner_->add_inplace(dst, src, scale, N);
  }
  void scale_inplace(float* x, float scale, std::int64_t N) override {
    OpTimer timer(*this, OpClass::kElementwise);
    inner_->scale_inplace(x, scale, N);
  }
  double squared_norm(const float* x, std::int64_t N) override {
    OpTimer timer(*this, OpClass::kElementwise);
    return inner_->squared_norm(x, N);
  }
  void squared_norm_into(double* sum, const float* x, std::int64_t N) override {
    OpTimer timer(*this, OpClass::kElementwise);
    inner_->squared_norm_into(sum, x, N);
  }
  void clip_to_global_norm(float* x, std::int64_t N, const double* squared_norms, int count,
                           float max_norm) override {
    OpTimer timer(*this, OpClass::kElementwise);
    inner_->clip_to_global_norm(x, N, squared_norms, count, max_norm);
  }
  std::int64_t cross_entropy_forward(float* losses, float* probs, const float* logits,
                                     const std::int32_t* targets, std::int64_t N, int V) override {
    OpTimer timer(*this, OpClass::kLoss);
    return inner_->cross_entropy_forward(losses, probs, logits, targets, N, V);
  }
  void cross_entropy_backward(float* dlogits, const float* probs, const std::int32_t* targets,
                              float scale, std::int64_t N, int V) override {
    OpTimer timer(*this, OpClass::kLoss);
    inner_->cross_entropy_backward(dlogits, probs, targets, scale, N, V);
  }
  void cross_entropy_backward_weighted(float* dlogits, const float* probs,
                                       const std::int32_t* targets, const float* weights,
                                       float scale, std::int64_t N, int V) override {
    OpTimer timer(*this, OpClass::kLoss);
    inner_->cross_entropy_backward_weighted(dlogits, probs, targets, weights, scale, N, V);
  }
  void bce_with_logits_forward(float* losses, float* probs, const float* logits,
                               const float* targets, std::int64_t N, int K) override {
    OpTimer timer(*this, OpClass::kLoss);
    inner_->bce_with_logits_forward(losses, probs, logits, targets, N, K);
  }
  void bce_with_logits_backward(float* dlogits, const float* probs, const float* targets,
                                float scale, std::int64_t N, int K) override {
    OpTimer timer(*this, OpClass::kLoss);
    inner_->bce_with_logits_backward(dlogits, probs, targets, scale, N, K);
  }
  void pool_forward(float* out, const float* inp, const std::int32_t* lengths, int B, int S,
                    int offset, int C, PoolMode mode) override {
    OpTimer timer(*this, OpClass::kLoss);
    inner_->pool_forward(out, inp, lengths, B, S, offset, C, mode);
  }
  void pool_backward(float* dinp, const float* dout, const std::int32_t* lengths, int B, int S,
                     int offset, int C, PoolMode mode) override {
    OpTimer timer(*this, OpClass::kLoss);
    inner_->pool_backward(dinp, dout, lengths, B, S, offset, C, mode);
  }
  void dropout_forward(float* out, float* mask, const float* inp, std::int64_t N, float p,
                       std::uint64_t seed, std::uint64_t stream, std::uint64_t first) override {
    OpTimer timer(*this, OpClass::kActivations);
    inner_->dropout_forward(out, mask, inp, N, p, seed, stream, first);
  }
  void dropout_backward(float* dinp, const float* dout, const float* mask,
                        std::int64_t N) override {
    OpTimer timer(*this, OpClass::kActivations);
    inner_->dropout_backward(dinp, dout, mask, N);
  }
  void adamw_update(float* param, const float* grad, float* m, float* v, std::int64_t n, float lr,
                    float beta1, float beta2, float eps, float weight_decay, int step) override {
    OpTimer timer(*this, OpClass::kOptimizer);
    inner_->adamw_update(param, grad, m, v, n, lr, beta1, beta2, eps, weight_decay, step);
  }
  void sgd_update(float* param, const float* grad, float* velocity, std::int64_t n, float lr,
                  float momentum, float weight_decay) override {
    OpTimer timer(*this, OpClass::kOptimizer);
    inner_->sgd_update(param, grad, velocity, n, lr, momentum, weight_decay);
  }
  void layernorm_forward_eps(float* out, float* mean, float* rstd, const float* inp,
                             const float* weight, const float* bias, std::int64_t N, int C,
                             float eps) override {
    OpTimer timer(*this, OpClass::kNorms);
    inner_->layernorm_forward_eps(out, mean, rstd, inp, weight, bias, N, C, eps);
  }
  void gelu_erf_forward(float* out, const float* inp, std::int64_t N) override {
    OpTimer timer(*this, OpClass::kActivations);
    inner_->gelu_erf_forward(out, inp, N);
  }
  void gelu_erf_backward(float* dinp, const float* inp, const float* dout,
                         std::int64_t N) override {
    OpTimer timer(*this, OpClass::kActivations);
    inner_->gelu_erf_backward(dinp, inp, dout, N);
  }
  void tanh_forward(float* out, const float* inp, std::int64_t N) override {
    OpTimer timer(*this, OpClass::kActivations);
    inner_->tanh_forward(out, inp, N);
  }
  void tanh_backward(float* dinp, const float* out, const float* dout, std::int64_t N) override {
    OpTimer timer(*this, OpClass::kActivations);
    inner_->tanh_backward(dinp, out, dout, N);
  }
  void rmsnorm_forward(float* out, float* rstd, const float* inp, const float* weight,
                       std::int64_t N, int C, float eps) override {
    OpTimer timer(*this, OpClass::kNorms);
    inner_->rmsnorm_forward(out, rstd, inp, weight, N, C, eps);
  }
  void rmsnorm_backward(float* dinp, float* dweight, const float* dout, const float* inp,
                        const float* weight, const float* rstd, std::int64_t N, int C,
                        GradMode mode) override {
    OpTimer timer(*this, OpClass::kNorms);
    inner_->rmsnorm_backward(dinp, dweight, dout, inp, weight, rstd, N, C, mode);
  }
  void rope_forward(float* out, const float* inp, int B, int T, int NH, int D, int pos0,
                    float theta, float position_scale) override {
    OpTimer timer(*this, OpClass::kEmbeddings);
    inner_->rope_forward(out, inp, B, T, NH, D, pos0, theta, position_scale);
  }
  void rope_backward(float* dinp, const float* dout, int B, int T, int NH, int D, int pos0,
                     float theta, float position_scale) override {
    OpTimer timer(*this, OpClass::kEmbeddings);
    inner_->rope_backward(dinp, dout, B, T, NH, D, pos0, theta, position_scale);
  }
  void scale_columns(float* out, const float* inp, const float* scale, const float* divisor,
                     std::int64_t N, int C, bool accumulate) override {
    OpTimer timer(*this, OpClass::kElementwise);
    inner_->scale_columns(out, inp, scale, divisor, N, C, accumulate);
  }
  void scale_columns_backward(float* dinp, float* dscale, const float* dout, const float* inp,
                              const float* scale, const float* divisor, std::int64_t N,
                              int C) override {
    OpTimer timer(*this, OpClass::kElementwise);
    inner_->scale_columns_backward(dinp, dscale, dout, inp, scale, divisor, N, C);
  }
  void row_norms(float* out, const float* x, std::int64_t N, int C) override {
    OpTimer timer(*this, OpClass::kNorms);
    inner_->row_norms(out, x, N, C);
  }
  void swiglu_forward(float* out, const float* gate, const float* up, std::int64_t N) override {
    OpTimer timer(*this, OpClass::kActivations);
    inner_->swiglu_forward(out, gate, up, N);
  }
  void swiglu_backward(float* dgate, float* dup, const float* dout, const float* gate,
                       const float* up, std::int64_t N) override {
    OpTimer timer(*this, OpClass::kActivations);
    inner_->swiglu_backward(dgate, dup, dout, gate, up, N);
  }
  void repeat_kv_forward(float* out, const float* inp, std::int64_t N, int NKV, int groups,
                         int D) override {
    OpTimer timer(*this, OpClass::kElementwise);
    inner_->repeat_kv_forward(out, inp, N, NKV, groups, D);
  }
  void repeat_kv_backward(float* dinp, const float* dout, std::int64_t N, int NKV, int groups,
                          int D) override {
    OpTimer timer(*this, OpClass::kElementwise);
    inner_->repeat_kv_backward(dinp, dout, N, NKV, groups, D);
  }

 private:
  std::unique_ptr<Backend> inner_;
  OpProfile& profile_;
  const bool wait_per_operation_;
};

}  // namespace

std::unique_ptr<Backend> make_profiling_backend(std::unique_ptr<Backend> inner,
                                                OpProfile& profile) {
  return std::make_unique<ProfilingBackend>(std::move(inner), profile);
}

}  // namespace scion::runtime
