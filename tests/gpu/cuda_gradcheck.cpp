// cuda_gradcheck: every backward of the CUDA backend checked by central finite differences
// of its own forward, through copy_to_device/copy_to_host only (the test never reads
// device memory on the host). The op harness (tests/backend/) compares each op with the
// CPU; this checks that the backward ops are the gradients of the forward ops as the
// device computes them, and that chained forward/backward calls agree (saved values,
// aliasing, accumulation into zeroed parameter gradients).
//
// The loss is Σ w·out in double with fixed random weights w, so dout = w. Tolerance, as
// tests/unit/runtime_gradcheck.h argues for the CPU: step h = 1e-2, |analytic − numeric| <=
// 2e-3 + 2e-2·|numeric| (truncation O(h²) ≈ 1e-4 relative, fp32 round-off in the loss
// about 1e-5·|L|; a wrong term errs by O(1)). fp32 only: bf16 products round each operand
// to 8 bits, coarser than the step, so differences of their losses are noise.
//
// Usage: cuda_gradcheck [--backend cuda|cpu]   (cpu: the same checks on the CPU reference,
// which is how this program is tested where no GPU is)
// Exit: 0 all within tolerance, 1 some gradient is not (or the CUDA backend cannot be made
// where an NVIDIA device is visible: tests/gpu/visible_devices.h), 2 usage, 77 the CUDA backend
// cannot run here (not built, plugin not loaded, no device).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "runtime/backend.h"
#include "runtime/cuda_plugin.h"
#include "visible_devices.h"

using namespace scion;
using runtime::Backend;
using runtime::GradMode;

namespace {

constexpr double kAtol = 2e-3, kRtol = 2e-2;
constexpr float kStep = 1e-2f;

std::vector<float> normal_values(std::size_t n, std::uint64_t seed, float scale = 1.0f) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal(0.0f, scale);
  std::vector<float> v(n);
  for (float& x : v) x = normal(rng);
  return v;
}

// Backend memory for one evaluation, freed at the end of it.
class Buffers {
 public:
  explicit Buffers(Backend& backend) : backend_(backend) {}
  ~Buffers() {
    for (void* p : owned_) backend_.deallocate(p);
  }
  Buffers(const Buffers&) = delete;
  Buffers& operator=(const Buffers&) = delete;
  float* zeros(std::size_t n) {
    auto* p = static_cast<float*>(take(n * sizeof(float)));
    backend_.fill_zero(p, n * sizeof(float));
    return p;
  }
  template <class T>
  T* upload(const std::vector<T>& host) {
    auto* p = static_cast<T*>(take(host.size() * sizeof(T)));
    backend_.copy_to_device(p, host.data(), host.size() * sizeof(T));
    return p;
  }

 private:
  void* take(std::size_t bytes) {
    void* p = backend_.allocate(bytes);
    if (p == nullptr) {
      std::fprintf(stderr, "cuda_gradcheck: cannot allocate %zu bytes of backend memory\n", bytes);
      std::exit(1);
    }
    owned_.push_back(p);
    return p;
  }
  Backend& backend_;
  std::vector<void*> owned_;
};

// One op: differentiable inputs (host values), the forward into `out`, and the forward
// plus backward that writes the gradient of Σ dout·out into grads (zeroed beforehand).
struct GradCase {
  std::string name;
  std::vector<std::pair<std::string, std::vector<float>>> inputs;
  std::size_t out_size = 0;
  std::function<void(Backend&, Buffers&, const std::vector<float*>& in, float* out)> forward;
  std::function<void(Backend&, Buffers&, const std::vector<float*>& in, const float* dout,
                     const std::vector<float*>& grads)>
      backward;
};

std::vector<float*> upload_inputs(Buffers& buffers, const GradCase& c) {
  std::vector<float*> in;
  for (const auto& [name, values] : c.inputs) in.push_back(buffers.upload(values));
  return in;
}

double loss_of(Backend& backend, const GradCase& c, const std::vector<float>& w) {
  Buffers buffers(backend);
  const std::vector<float*> in = upload_inputs(buffers, c);
  float* out = buffers.zeros(c.out_size);
  c.forward(backend, buffers, in, out);
  std::vector<float> host(c.out_size);
  backend.copy_to_host(host.data(), out, host.size() * sizeof(float));
  double sum = 0.0;
  for (std::size_t i = 0; i < host.size(); ++i) sum += static_cast<double>(host[i]) * w[i];
  return sum;
}

// Returns the number of gradient entries out of tolerance (at most 300 checked per input).
int check(Backend& backend, GradCase c) {
  const std::vector<float> w = normal_values(c.out_size, 99);
  std::vector<std::vector<float>> analytic;
  {
    Buffers buffers(backend);
    const std::vector<float*> in = upload_inputs(buffers, c);
    std::vector<float*> grads;
    for (const auto& [name, values] : c.inputs) grads.push_back(buffers.zeros(values.size()));
    c.backward(backend, buffers, in, buffers.upload(w), grads);
    for (std::size_t j = 0; j < grads.size(); ++j) {
      analytic.emplace_back(c.inputs[j].second.size());
      backend.copy_to_host(analytic[j].data(), grads[j], analytic[j].size() * sizeof(float));
    }
  }
  int failures = 0;
  for (std::size_t j = 0; j < c.inputs.size(); ++j) {
    std::vector<float>& x = c.inputs[j].second;
    const std::size_t stride = x.size() > 300 ? x.size() / 300 + 1 : 1;
    int bad = 0;
    double worst = 0;
    for (std::size_t i = 0; i < x.size(); i += stride) {
      const float saved = x[i];
      x[i] = saved + kStep;
      const double plus = loss_of(backend, c, w);
      x[i] = saved - kStep;
      const double minus = loss_of(backend, c, w);
      x[i] = saved;
      const double numeric = (plus - minus) / (2.0 * kStep);
      const double error = std::fabs(analytic[j][i] - numeric);
      worst = std::max(worst, error / (kAtol + kRtol * std::fabs(numeric)));
      if (error > kAtol + kRtol * std::fabs(numeric) && bad++ < 3)
        std::printf("  %s d%s[%zu]: analytic %.6g numeric %.6g\n", c.name.c_str(),
                    c.inputs[j].first.c_str(), i, analytic[j][i], numeric);
    }
    std::printf("%-34s d%-10s worst error / tolerance %.3f  %s\n", c.name.c_str(),
                c.inputs[j].first.c_str(), worst, bad == 0 ? "ok" : "FAIL");
    failures += bad;
  }
  if (const std::string error = backend.error(); !error.empty()) {
    std::printf("%s: the backend failed: %s\n", c.name.c_str(), error.c_str());
    ++failures;
  }
  return failures;
}

std::vector<GradCase> cases() {
  std::vector<GradCase> all;
  {  // layernorm: (N, C)
    const int N = 6, C = 40;
    GradCase c{"layernorm", {{"inp", normal_values(N * C, 1)}, {"weight", normal_values(C, 2)}, {"bias", normal_values(C, 3)}}, N * C};
    c.forward = [=](Backend& b, Buffers& m, const std::vector<float*>& in, float* out) {
      b.layernorm_forward(out, m.zeros(N), m.zeros(N), in[0], in[1], in[2], N, C);
    };
    c.backward = [=](Backend& b, Buffers& m, const std::vector<float*>& in, const float* dout, const std::vector<float*>& g) {
      float *mean = m.zeros(N), *rstd = m.zeros(N), *out = m.zeros(N * C);
      b.layernorm_forward(out, mean, rstd, in[0], in[1], in[2], N, C);
      b.layernorm_backward(g[0], g[1], g[2], dout, in[0], in[1], mean, rstd, N, C, GradMode::kAssign);
    };
    all.push_back(c);
  }
  {  // rmsnorm
    const int N = 5, C = 36;
    GradCase c{"rmsnorm", {{"inp", normal_values(N * C, 4)}, {"weight", normal_values(C, 5)}}, N * C};
    c.forward = [=](Backend& b, Buffers& m, const std::vector<float*>& in, float* out) {
      b.rmsnorm_forward(out, m.zeros(N), in[0], in[1], N, C, 1e-6f);
    };
    c.backward = [=](Backend& b, Buffers& m, const std::vector<float*>& in, const float* dout, const std::vector<float*>& g) {
      float *rstd = m.zeros(N), *out = m.zeros(N * C);
      b.rmsnorm_forward(out, rstd, in[0], in[1], N, C, 1e-6f);
      b.rmsnorm_backward(g[0], g[1], dout, in[0], in[1], rstd, N, C, GradMode::kAssign);
    };
    all.push_back(c);
  }
  {  // matmul with bias, scaled backward
    const int N = 7, C = 24, OC = 20;
    GradCase c{"matmul", {{"inp", normal_values(N * C, 6)}, {"weight", normal_values(OC * C, 7, 0.3f)}, {"bias", normal_values(OC, 8)}}, static_cast<std::size_t>(N * OC)};
    c.forward = [=](Backend& b, Buffers&, const std::vector<float*>& in, float* out) {
      b.matmul_forward(out, in[0], in[1], in[2], N, C, OC);
    };
    c.backward = [=](Backend& b, Buffers&, const std::vector<float*>& in, const float* dout, const std::vector<float*>& g) {
      b.matmul_backward(g[0], g[1], g[2], dout, in[0], in[1], 1.0f, N, C, OC, GradMode::kAssign);
    };
    all.push_back(c);
  }
  // attention: a segment of B sequences with prefix keys/values, padded lengths, both masks
  for (const bool causal : {false, true}) {
    const int B = 2, T = 5, P = 3, C = 16, NH = 2, S = P + T;
    const std::vector<std::int32_t> lengths = {5, 3};
    GradCase c{causal ? "attention causal, prefix" : "attention, prefix",
               {{"q", normal_values(B * T * C, 9)}, {"k", normal_values(B * T * C, 10)}, {"v", normal_values(B * T * C, 11)},
                {"prefix_k", normal_values(P * C, 12)}, {"prefix_v", normal_values(P * C, 13)}},
               static_cast<std::size_t>(B * T * C)};
    c.forward = [=](Backend& b, Buffers& m, const std::vector<float*>& in, float* out) {
      b.attention_forward(out, m.zeros(B * NH * T * S), in[0], in[1], in[2], in[3], in[4], m.upload(lengths), B, T, P, C, NH, causal, 0);
    };
    c.backward = [=](Backend& b, Buffers& m, const std::vector<float*>& in, const float* dout, const std::vector<float*>& g) {
      float *probs = m.zeros(B * NH * T * S), *out = m.zeros(B * T * C);
      b.attention_forward(out, probs, in[0], in[1], in[2], in[3], in[4], m.upload(lengths), B, T, P, C, NH, causal, 0);
      b.attention_backward(g[0], g[1], g[2], g[3], g[4], dout, probs, in[0], in[1], in[2], in[3], in[4], B, T, P, C, NH);
    };
    all.push_back(c);
  }
  {  // elementwise activations
    const int N = 64;
    auto unary = [&](const char* name, auto fwd, auto bwd_uses_out) {
      GradCase c{name, {{"inp", normal_values(N, 14, 1.5f)}}, N};
      c.forward = [=](Backend& b, Buffers&, const std::vector<float*>& in, float* out) { fwd(b, out, in[0]); };
      c.backward = [=](Backend& b, Buffers& m, const std::vector<float*>& in, const float* dout, const std::vector<float*>& g) {
        float* out = m.zeros(N);
        fwd(b, out, in[0]);
        bwd_uses_out(b, g[0], in[0], out, dout);
      };
      all.push_back(c);
    };
    unary("gelu", [=](Backend& b, float* o, const float* x) { b.gelu_forward(o, x, N); },
          [=](Backend& b, float* d, const float* x, const float*, const float* dy) { b.gelu_backward(d, x, dy, N); });
    unary("gelu_erf", [=](Backend& b, float* o, const float* x) { b.gelu_erf_forward(o, x, N); },
          [=](Backend& b, float* d, const float* x, const float*, const float* dy) { b.gelu_erf_backward(d, x, dy, N); });
    unary("tanh", [=](Backend& b, float* o, const float* x) { b.tanh_forward(o, x, N); },
          [=](Backend& b, float* d, const float*, const float* y, const float* dy) { b.tanh_backward(d, y, dy, N); });
  }
  {  // swiglu
    const int N = 48;
    GradCase c{"swiglu", {{"gate", normal_values(N, 15)}, {"up", normal_values(N, 16)}}, N};
    c.forward = [=](Backend& b, Buffers&, const std::vector<float*>& in, float* out) { b.swiglu_forward(out, in[0], in[1], N); };
    c.backward = [=](Backend& b, Buffers&, const std::vector<float*>& in, const float* dout, const std::vector<float*>& g) {
      b.swiglu_backward(g[0], g[1], dout, in[0], in[1], N);
    };
    all.push_back(c);
  }
  {  // rope
    const int B = 2, T = 4, NH = 2, D = 8;
    GradCase c{"rope", {{"inp", normal_values(B * T * NH * D, 17)}}, static_cast<std::size_t>(B * T * NH * D)};
    c.forward = [=](Backend& b, Buffers&, const std::vector<float*>& in, float* out) { b.rope_forward(out, in[0], B, T, NH, D, 3, 10000.0f, 1.0f); };
    c.backward = [=](Backend& b, Buffers&, const std::vector<float*>&, const float* dout, const std::vector<float*>& g) {
      b.rope_backward(g[0], dout, B, T, NH, D, 3, 10000.0f, 1.0f);
    };
    all.push_back(c);
  }
  {  // repeat_kv
    const int N = 3, NKV = 2, groups = 3, D = 4;
    GradCase c{"repeat_kv", {{"inp", normal_values(N * NKV * D, 18)}}, static_cast<std::size_t>(N * NKV * groups * D)};
    c.forward = [=](Backend& b, Buffers&, const std::vector<float*>& in, float* out) { b.repeat_kv_forward(out, in[0], N, NKV, groups, D); };
    c.backward = [=](Backend& b, Buffers&, const std::vector<float*>&, const float* dout, const std::vector<float*>& g) {
      b.repeat_kv_backward(g[0], dout, N, NKV, groups, D);
    };
    all.push_back(c);
  }
  {  // cross-entropy: the loss of each row is the output; one target ignored
    const int N = 5, V = 11;
    const std::vector<std::int32_t> targets = {3, 0, runtime::kIgnoreIndex, 10, 7};
    GradCase c{"cross_entropy", {{"logits", normal_values(N * V, 19, 2.0f)}}, N};
    c.forward = [=](Backend& b, Buffers& m, const std::vector<float*>& in, float* out) {
      b.cross_entropy_forward(out, m.zeros(N * V), in[0], m.upload(targets), N, V);
    };
    // cross_entropy_backward takes one scale for every row, so dout is read back to the
    // host and each row's gradient scaled by its weight: d loss / d logits = Σ_n w_n dℓ_n.
    c.backward = [=](Backend& b, Buffers& m, const std::vector<float*>& in, const float* dout, const std::vector<float*>& g) {
      float *probs = m.zeros(N * V), *losses = m.zeros(N);
      const std::int32_t* t = m.upload(targets);
      b.cross_entropy_forward(losses, probs, in[0], t, N, V);
      std::vector<float> w(N);
      b.copy_to_host(w.data(), dout, N * sizeof(float));
      for (int n = 0; n < N; ++n)
        b.cross_entropy_backward(g[0] + n * V, probs + n * V, t + n, w[n], 1, V);
    };
    all.push_back(c);
  }
  {  // embedding with positions and prompt rows; a repeated token
    const int B = 2, T = 3, P = 2, C = 6, vocab = 5, S = P + T;
    const std::vector<std::int32_t> tokens = {1, 4, 1, 0, 1, 3};
    GradCase c{"embedding", {{"wte", normal_values(vocab * C, 20)}, {"wpe", normal_values(S * C, 21)}, {"prompt", normal_values(P * C, 22)}},
               static_cast<std::size_t>(B * S * C)};
    c.forward = [=](Backend& b, Buffers& m, const std::vector<float*>& in, float* out) {
      b.embedding_forward(out, m.upload(tokens), in[0], in[1], in[2], B, T, P, C);
    };
    c.backward = [=](Backend& b, Buffers& m, const std::vector<float*>&, const float* dout, const std::vector<float*>& g) {
      b.embedding_backward(g[0], g[1], g[2], dout, m.upload(tokens), B, T, P, C);
    };
    all.push_back(c);
  }
  for (const runtime::PoolMode mode : {runtime::PoolMode::kCls, runtime::PoolMode::kMean, runtime::PoolMode::kLast}) {
    const int B = 3, S = 6, offset = 1, C = 5;
    const std::vector<std::int32_t> lengths = {5, 2, 4};
    GradCase c{mode == runtime::PoolMode::kMean ? "pool mean" : mode == runtime::PoolMode::kCls ? "pool cls" : "pool last",
               {{"inp", normal_values(B * S * C, 23)}}, static_cast<std::size_t>(B * C)};
    c.forward = [=](Backend& b, Buffers& m, const std::vector<float*>& in, float* out) {
      b.pool_forward(out, in[0], m.upload(lengths), B, S, offset, C, mode);
    };
    c.backward = [=](Backend& b, Buffers& m, const std::vector<float*>&, const float* dout, const std::vector<float*>& g) {
      b.pool_backward(g[0], dout, m.upload(lengths), B, S, offset, C, mode);
    };
    all.push_back(c);
  }
  return all;
}

}  // namespace

int main(int argc, char** argv) {
  std::string which = "cuda";
  if (argc == 3 && std::strcmp(argv[1], "--backend") == 0) which = argv[2];
  if ((argc != 1 && argc != 3) || (which != "cuda" && which != "cpu")) {
    std::fprintf(stderr, "usage: cuda_gradcheck [--backend cuda|cpu]\n");
    return 2;
  }
  std::unique_ptr<Backend> backend;
  if (which == "cpu") {
    backend = runtime::make_cpu_backend(1);
  } else {
    auto made = runtime::make_cuda_backend(runtime::Precision::kF32);
    if (!made) return test::cannot_run_here("cuda_gradcheck", made.status().message());
    backend = std::move(*made);
  }
  int failures = 0;
  for (const GradCase& c : cases()) failures += check(*backend, c);
  std::printf("cuda_gradcheck (%s): %d gradient entr%s out of tolerance\n", backend->name().c_str(), failures,
              failures == 1 ? "y" : "ies");
  return failures == 0 ? 0 : 1;
}
