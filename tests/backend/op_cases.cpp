// The cases of the backend op harness: every Backend operation at several shapes.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>

#include "op_harness.h"

namespace scion::test {
namespace {

using runtime::GradMode;
using runtime::kIgnoreIndex;
using runtime::PoolMode;
using K = OutputCheck;

std::string sizes(std::initializer_list<std::pair<const char*, std::int64_t>> named) {
  std::string text;
  for (const auto& [name, value] : named) {
    if (!text.empty()) text += ' ';
    text += name;
    text += '=';
    text += std::to_string(value);
  }
  return text;
}

std::size_t n_of(std::int64_t a, std::int64_t b = 1, std::int64_t c = 1, std::int64_t d = 1) {
  return static_cast<std::size_t>(a * b * c * d);
}

// ---- embeddings ------------------------------------------------------------------------

void embedding_cases(std::vector<OpCase>& cases) {
  struct Shape { int B, T, P, C, V; };
  for (const Shape s : {Shape{2, 3, 2, 4, 5}, Shape{8, 128, 0, 256, 256}, Shape{4, 64, 8, 128, 300}}) {
    const int S = s.P + s.T;
    const std::string shape = sizes({{"B", s.B}, {"T", s.T}, {"P", s.P}, {"C", s.C}, {"V", s.V}});
    const auto tokens = random_ints(n_of(s.B, s.T), 1, s.V);
    cases.push_back({"embedding_forward", shape, [=](OpRun& r) {
      float* out = r.buffer(n_of(s.B, S, s.C));
      float* prompt = s.P ? r.upload(random_values(n_of(s.P, s.C), 4)) : nullptr;
      r.backend().embedding_forward(out, r.upload(tokens), r.upload(random_values(n_of(s.V, s.C), 2)),
                                    r.upload(random_values(n_of(S, s.C), 3)), prompt, s.B, s.T,
                                    s.P, s.C);
      r.keep("out", out, n_of(s.B, S, s.C));
    }});
    cases.push_back({"embedding_backward", shape, [=](OpRun& r) {
      float* dwte = r.upload(random_values(n_of(s.V, s.C), 5));  // parameter gradients accumulate
      float* dwpe = r.upload(random_values(n_of(S, s.C), 6));
      float* dprompt = s.P ? r.buffer(n_of(s.P, s.C)) : nullptr;  // assigned
      r.backend().embedding_backward(dwte, dwpe, dprompt, r.upload(random_values(n_of(s.B, S, s.C), 7)),
                                     r.upload(tokens), s.B, s.T, s.P, s.C);
      r.keep("dwte", dwte, n_of(s.V, s.C));
      r.keep("dwpe", dwpe, n_of(S, s.C));
      if (s.P) r.keep("dprompt", dprompt, n_of(s.P, s.C));
    }});
  }
}

// ---- layer norm ------------------------------------------------------------------------

// Each row's mean and 1/std, in double on the host, so backward is tested on its own.
void row_statistics(const std::vector<float>& x, std::int64_t N, int C, float eps,
                    std::vector<float>& mean, std::vector<float>& rstd) {
  mean.assign(n_of(N), 0.0f);
  rstd.assign(n_of(N), 0.0f);
  for (std::int64_t n = 0; n < N; ++n) {
    double sum = 0, squares = 0;
    for (int c = 0; c < C; ++c) sum += x[n_of(n, C) + c];
    const double m = sum / C;
    for (int c = 0; c < C; ++c) squares += (x[n_of(n, C) + c] - m) * (x[n_of(n, C) + c] - m);
    mean[n_of(n)] = static_cast<float>(m);
    rstd[n_of(n)] = static_cast<float>(1.0 / std::sqrt(squares / C + eps));
  }
}

void layernorm_cases(std::vector<OpCase>& cases) {
  struct Shape { std::int64_t N; int C; };
  for (const Shape s : {Shape{6, 10}, Shape{300, 130}, Shape{512, 256}}) {
    const std::string shape = sizes({{"N", s.N}, {"C", s.C}});
    const auto x = random_values(n_of(s.N, s.C), 11, 2.0f);
    const auto w = random_values(n_of(s.C), 12), b = random_values(n_of(s.C), 13);
    auto forward = [=](OpRun& r, bool own_eps) {
      float* out = r.buffer(n_of(s.N, s.C));
      float* mean = r.buffer(n_of(s.N));
      float* rstd = r.buffer(n_of(s.N));
      if (own_eps)  // BERT's layer_norm_eps
        r.backend().layernorm_forward_eps(out, mean, rstd, r.upload(x), r.upload(w), r.upload(b),
                                          s.N, s.C, 1e-12f);
      else
        r.backend().layernorm_forward(out, mean, rstd, r.upload(x), r.upload(w), r.upload(b), s.N, s.C);
      r.keep("out", out, n_of(s.N, s.C));
      r.keep("mean", mean, n_of(s.N));
      r.keep("rstd", rstd, n_of(s.N));
    };
    cases.push_back({"layernorm_forward", shape, [=](OpRun& r) { forward(r, false); }});
    cases.push_back({"layernorm_forward_eps", shape + " eps=1e-12", [=](OpRun& r) { forward(r, true); }});
    std::vector<float> mean, rstd;
    row_statistics(x, s.N, s.C, runtime::kLayerNormEps, mean, rstd);
    for (const GradMode mode : {GradMode::kAssign, GradMode::kAccumulate}) {
      const bool assign = mode == GradMode::kAssign;
      // Accumulate mode runs as the model's residual stream does, with a frozen bias.
      cases.push_back({"layernorm_backward", shape + (assign ? " assign" : " accumulate, no dbias"),
                       [=](OpRun& r) {
        float* dinp = assign ? r.buffer(n_of(s.N, s.C)) : r.upload(random_values(n_of(s.N, s.C), 14));
        float* dweight = r.upload(random_values(n_of(s.C), 15));
        float* dbias = assign ? r.upload(random_values(n_of(s.C), 16)) : nullptr;
        r.backend().layernorm_backward(dinp, dweight, dbias, r.upload(random_values(n_of(s.N, s.C), 17)),
                                       r.upload(x), r.upload(w), r.upload(mean), r.upload(rstd), s.N,
                                       s.C, mode);
        r.keep("dinp", dinp, n_of(s.N, s.C));
        r.keep("dweight", dweight, n_of(s.C));
        if (dbias) r.keep("dbias", dbias, n_of(s.C));
      }});
    }
  }
}

// ---- linear layers ---------------------------------------------------------------------

void matmul_cases(std::vector<OpCase>& cases) {
  struct Shape { std::int64_t N; int C, OC; };
  // Small; ragged; above every threshold; a W1-like product; the LoRA down and up products.
  for (const Shape s : {Shape{4, 6, 5}, Shape{37, 65, 129}, Shape{300, 96, 130},
                        Shape{512, 384, 768}, Shape{512, 256, 8}, Shape{512, 8, 256}}) {
    const std::string shape = sizes({{"N", s.N}, {"C", s.C}, {"OC", s.OC}});
    const auto x = random_values(n_of(s.N, s.C), 21), w = random_values(n_of(s.OC, s.C), 22);
    const auto bias = random_values(n_of(s.OC), 23), dout = random_values(n_of(s.N, s.OC), 24);
    for (const bool with_bias : {true, false}) {
      cases.push_back({"matmul_forward", shape + (with_bias ? " bias" : " no bias"), [=](OpRun& r) {
        float* out = r.buffer(n_of(s.N, s.OC));
        r.backend().matmul_forward(out, r.upload(x), r.upload(w), with_bias ? r.upload(bias) : nullptr,
                                   s.N, s.C, s.OC);
        r.keep("out", out, n_of(s.N, s.OC), K::kProduct);
      }});
    }
    // Operands one float past an allocation's start, as a layer's row range of a larger
    // tensor is: 4-byte aligned only (the CUDA backend's cuBLASLt plans are keyed by
    // alignment, lt_matmul.h).
    cases.push_back({"matmul_forward", shape + " bias, 4-byte aligned", [=](OpRun& r) {
      auto shifted = [&](const std::vector<float>& v) {
        std::vector<float> padded(v.size() + 1, 0.0f);
        std::copy(v.begin(), v.end(), padded.begin() + 1);
        return r.upload(padded) + 1;
      };
      float* out = r.buffer(n_of(s.N, s.OC) + 1) + 1;
      r.backend().matmul_forward(out, shifted(x), shifted(w), shifted(bias), s.N, s.C, s.OC);
      r.keep("out", out, n_of(s.N, s.OC), K::kProduct);
    }});
    cases.push_back({"matmul_forward_accumulate", shape + " scale=0.5", [=](OpRun& r) {
      float* out = r.upload(random_values(n_of(s.N, s.OC), 25));
      r.backend().matmul_forward_accumulate(out, r.upload(x), r.upload(w), 0.5f, s.N, s.C, s.OC);
      r.keep("out", out, n_of(s.N, s.OC), K::kProduct);
    }});
    // The model's uses: a trained layer (all gradients); a LoRA product (scaled, input
    // gradient added, no bias); a frozen layer (input gradient only); the lowest trained
    // layer (weight gradients only).
    enum class Use { kTrained, kLora, kFrozen, kWeightsOnly };
    for (const Use use : {Use::kTrained, Use::kLora, Use::kFrozen, Use::kWeightsOnly}) {
      const char* names[] = {" trained", " lora scale=0.5 accumulate", " frozen", " weights only"};
      cases.push_back({"matmul_backward", shape + names[static_cast<int>(use)], [=](OpRun& r) {
        const bool accumulate = use == Use::kLora;
        float* dinp = use == Use::kWeightsOnly ? nullptr
                      : accumulate             ? r.upload(random_values(n_of(s.N, s.C), 26))
                                               : r.buffer(n_of(s.N, s.C));
        float* dweight = use == Use::kFrozen ? nullptr : r.upload(random_values(n_of(s.OC, s.C), 27));
        float* dbias = use == Use::kTrained || use == Use::kWeightsOnly
                           ? r.upload(random_values(n_of(s.OC), 28)) : nullptr;
        r.backend().matmul_backward(dinp, dweight, dbias, r.upload(dout), r.upload(x), r.upload(w),
                                    accumulate ? 0.5f : 1.0f, s.N, s.C, s.OC,
                                    accumulate ? GradMode::kAccumulate : GradMode::kAssign);
        if (dinp) r.keep("dinp", dinp, n_of(s.N, s.C), K::kProduct);
        if (dweight) r.keep("dweight", dweight, n_of(s.OC, s.C), K::kProduct);
        if (dbias) r.keep("dbias", dbias, n_of(s.OC));  // a column sum: fp32 in every precision
      }});
    }
  }
}

// A frozen weight held in bf16: each value's upper 16 bits. These products round their
// input to bf16 in every backend precision (only a bf16 pool holds such weights), so the
// fp32 reference does the same arithmetic (OutputCheck::kBf16Product).
std::vector<std::uint16_t> bf16_bits(const std::vector<float>& values) {
  std::vector<std::uint16_t> bits(values.size());
  for (std::size_t i = 0; i < values.size(); ++i) {
    std::uint32_t word;
    std::memcpy(&word, &values[i], sizeof word);
    bits[i] = static_cast<std::uint16_t>(word >> 16);
  }
  return bits;
}

void bf16_weight_matmul_cases(std::vector<OpCase>& cases) {
  struct Shape { std::int64_t N; int C, OC; };
  for (const Shape s : {Shape{4, 6, 5}, Shape{300, 96, 130}, Shape{512, 384, 768}}) {
    const std::string shape = sizes({{"N", s.N}, {"C", s.C}, {"OC", s.OC}});
    const auto x = random_values(n_of(s.N, s.C), 91);
    const auto w = bf16_bits(random_values(n_of(s.OC, s.C), 92));
    const auto bias = random_values(n_of(s.OC), 93), dout = random_values(n_of(s.N, s.OC), 94);
    for (const bool with_bias : {true, false}) {
      cases.push_back({"matmul_forward_bf16_weight", shape + (with_bias ? " bias" : " no bias"),
                       [=](OpRun& r) {
        float* out = r.buffer(n_of(s.N, s.OC));
        r.backend().matmul_forward_bf16_weight(out, r.upload(x), r.upload(w),
                                               with_bias ? r.upload(bias) : nullptr, s.N, s.C, s.OC);
        r.keep("out", out, n_of(s.N, s.OC), K::kBf16Product);
      }});
    }
    // A frozen layer under a trained one (input gradient assigned, the bias trained) and a
    // LoRA-style accumulation of a scaled input gradient with no bias.
    for (const bool accumulate : {false, true}) {
      cases.push_back({"matmul_backward_bf16_weight",
                       shape + (accumulate ? " scale=0.5 accumulate" : " assign bias"),
                       [=](OpRun& r) {
        float* dinp = accumulate ? r.upload(random_values(n_of(s.N, s.C), 95))
                                 : r.buffer(n_of(s.N, s.C));
        float* dbias = accumulate ? nullptr : r.upload(random_values(n_of(s.OC), 96));
        r.backend().matmul_backward_bf16_weight(dinp, dbias, r.upload(dout), r.upload(w),
                                                accumulate ? 0.5f : 1.0f, s.N, s.C, s.OC,
                                                accumulate ? GradMode::kAccumulate
                                                           : GradMode::kAssign);
        r.keep("dinp", dinp, n_of(s.N, s.C), K::kBf16Product);
        if (dbias) r.keep("dbias", dbias, n_of(s.OC));  // a column sum: fp32 in every precision
      }});
    }
  }
}

// ---- attention -------------------------------------------------------------------------

void attention_cases(std::vector<OpCase>& cases) {
  // window: Mistral's sliding window (0: none), over prefix keys and padded rows too.
  struct Shape {
    int B, T, P, C, NH;
    bool causal, padded;
    int window;
  };
  for (const Shape s :
       {Shape{2, 4, 0, 8, 2, false, true, 0}, Shape{2, 4, 0, 8, 2, true, false, 0},
        Shape{2, 4, 3, 8, 2, false, true, 0}, Shape{2, 4, 2, 8, 2, true, false, 0},
        Shape{2, 6, 2, 8, 2, true, true, 2}, Shape{4, 128, 0, 256, 4, false, true, 0},
        Shape{2, 64, 8, 128, 4, false, true, 0}, Shape{2, 96, 4, 128, 4, true, false, 0},
        Shape{2, 96, 4, 128, 4, true, true, 40}}) {
    const std::string shape =
        sizes({{"B", s.B}, {"T", s.T}, {"P", s.P}, {"C", s.C}, {"NH", s.NH}}) +
        (s.causal ? " causal" : " bidirectional") + (s.padded ? " padded" : "") +
        (s.window ? " window=" + std::to_string(s.window) : "");
    const std::size_t n = n_of(s.B, s.T, s.C), probs_n = n_of(s.B, s.NH, s.T, s.P + s.T);
    std::vector<std::int32_t> lengths;
    for (int b = 0; b < s.B; ++b) lengths.push_back(s.T - (b * s.T) / (2 * s.B));  // T, then shorter
    auto run = [=](OpRun& r, bool backward) {
      float* q = r.upload(random_values(n, 31));
      float* k = r.upload(random_values(n, 32));
      float* v = r.upload(random_values(n, 33));
      float* pk = s.P ? r.upload(random_values(n_of(s.P, s.C), 34)) : nullptr;
      float* pv = s.P ? r.upload(random_values(n_of(s.P, s.C), 35)) : nullptr;
      float* out = r.buffer(n);
      float* probs = r.buffer(probs_n);
      r.backend().attention_forward(out, probs, q, k, v, pk, pv,
                                    s.padded ? r.upload(lengths) : nullptr, s.B, s.T, s.P, s.C,
                                    s.NH, s.causal, s.window);
      if (!backward) {
        r.keep("out", out, n, OutputCheck::kAttentionProduct);
        r.keep("probs", probs, probs_n, OutputCheck::kAttentionProduct);
        return;
      }
      float *dq = r.buffer(n), *dk = r.buffer(n), *dv = r.buffer(n);
      float* dpk = s.P ? r.buffer(n_of(s.P, s.C)) : nullptr;
      float* dpv = s.P ? r.buffer(n_of(s.P, s.C)) : nullptr;
      r.backend().attention_backward(dq, dk, dv, dpk, dpv, r.upload(random_values(n, 36)), probs, q,
                                     k, v, pk, pv, s.B, s.T, s.P, s.C, s.NH);
      r.keep("dq", dq, n, OutputCheck::kAttentionProduct);
      r.keep("dk", dk, n, OutputCheck::kAttentionProduct);
      r.keep("dv", dv, n, OutputCheck::kAttentionProduct);
      if (s.P) {
        r.keep("dprefix_k", dpk, n_of(s.P, s.C), OutputCheck::kAttentionProduct);
        r.keep("dprefix_v", dpv, n_of(s.P, s.C), OutputCheck::kAttentionProduct);
      }
    };
    cases.push_back({"attention_forward", shape, [=](OpRun& r) { run(r, false); }});
    cases.push_back({"attention_backward", shape, [=](OpRun& r) { run(r, true); }});
  }
}

// ---- element-wise ----------------------------------------------------------------------

const std::int64_t kElementCounts[] = {50, 4 * 32768 + 3};

void activation_cases(std::vector<OpCase>& cases) {
  for (const std::int64_t N : kElementCounts) {
    const std::string shape = sizes({{"N", N}});
    const auto x = random_values(n_of(N), 41, 4.0f), dout = random_values(n_of(N), 42);
    for (const bool erf : {false, true}) {
      const std::string name = erf ? "gelu_erf" : "gelu";
      cases.push_back({name + "_forward", shape, [=](OpRun& r) {
        float* out = r.buffer(n_of(N));
        if (erf) r.backend().gelu_erf_forward(out, r.upload(x), N);
        else r.backend().gelu_forward(out, r.upload(x), N);
        r.keep("out", out, n_of(N));
      }});
      cases.push_back({name + "_backward", shape, [=](OpRun& r) {
        float* dinp = r.buffer(n_of(N));
        if (erf) r.backend().gelu_erf_backward(dinp, r.upload(x), r.upload(dout), N);
        else r.backend().gelu_backward(dinp, r.upload(x), r.upload(dout), N);
        r.keep("dinp", dinp, n_of(N));
      }});
    }
    cases.push_back({"tanh_forward", shape, [=](OpRun& r) {
      float* out = r.buffer(n_of(N));
      r.backend().tanh_forward(out, r.upload(x), N);
      r.keep("out", out, n_of(N));
    }});
    std::vector<float> tanh_x(n_of(N));
    for (std::size_t i = 0; i < tanh_x.size(); ++i) tanh_x[i] = std::tanh(x[i]);
    cases.push_back({"tanh_backward", shape + " dinp=dout", [=](OpRun& r) {
      float* grad = r.upload(dout);  // in place, as the BERT pooler's backward runs it
      r.backend().tanh_backward(grad, r.upload(tanh_x), grad, N);
      r.keep("dinp", grad, n_of(N));
    }});
  }
}

void elementwise_cases(std::vector<OpCase>& cases) {
  for (const std::int64_t N : kElementCounts) {
    const std::string shape = sizes({{"N", N}});
    const auto a = random_values(n_of(N), 51), b = random_values(n_of(N), 52);
    cases.push_back({"residual_forward", shape, [=](OpRun& r) {
      float* out = r.buffer(n_of(N));
      r.backend().residual_forward(out, r.upload(a), r.upload(b), N);
      r.keep("out", out, n_of(N));
    }});
    cases.push_back({"copy", shape, [=](OpRun& r) {
      float* dst = r.buffer(n_of(N));
      r.backend().copy(dst, r.upload(a), N);
      r.keep("dst", dst, n_of(N), K::kExact);
    }});
    cases.push_back({"add_inplace", shape + " scale=-0.75", [=](OpRun& r) {
      float* dst = r.upload(a);
      r.backend().add_inplace(dst, r.upload(b), -0.75f, N);
      r.keep("dst", dst, n_of(N));
    }});
    cases.push_back({"scale_inplace", shape + " scale=0.3", [=](OpRun& r) {
      float* x = r.upload(a);
      r.backend().scale_inplace(x, 0.3f, N);
      r.keep("x", x, n_of(N));
    }});
    cases.push_back({"squared_norm", shape, [=](OpRun& r) {
      r.keep_value("sum", r.backend().squared_norm(r.upload(a), N));
    }});
    cases.push_back({"squared_norm_into", shape, [=](OpRun& r) {
                       auto* sum =
                           reinterpret_cast<double*>(r.buffer(2));  // one double of backend memory
                       r.backend().squared_norm_into(sum, r.upload(a), N);
                       double host = 0;
                       r.backend().copy_to_host(&host, sum, sizeof host);
                       r.keep_value("sum", host);
                     }});
    // Sums of squares whose global norm is 13: clipped to 6.5, and left alone under 20.
    for (const float max_norm : {6.5f, 20.0f}) {
      cases.push_back({"clip_to_global_norm",
                       shape + " norm=13 max=" + std::to_string(max_norm).substr(0, 4),
                       [=](OpRun& r) {
                         const double squares[3] = {25.0, 100.0, 44.0};
                         auto* sums = reinterpret_cast<double*>(r.buffer(6));
                         r.backend().copy_to_device(sums, squares, sizeof squares);
                         float* x = r.upload(a);
                         r.backend().clip_to_global_norm(x, N, sums, 3, max_norm);
                         r.keep("x", x, n_of(N));
                       }});
    }
  }
}

// ---- losses and pooling ----------------------------------------------------------------

void cross_entropy_cases(std::vector<OpCase>& cases) {
  struct Shape { std::int64_t N; int V; };
  // Classification; a small LM with ignored rows; an LM batch; a WordPiece vocabulary.
  for (const Shape s : {Shape{8, 2}, Shape{4, 6}, Shape{512, 256}, Shape{64, 30522}}) {
    const std::string shape = sizes({{"N", s.N}, {"V", s.V}});
    auto targets = random_ints(n_of(s.N), 61, s.V);
    for (std::size_t i = 1; i < targets.size(); i += 3) targets[i] = kIgnoreIndex;
    const auto logits = random_values(n_of(s.N, s.V), 62, 3.0f);
    auto run = [=](OpRun& r, bool backward) {
      float* losses = r.buffer(n_of(s.N));
      float* probs = r.buffer(n_of(s.N, s.V));
      const std::int32_t* t = r.upload(targets);
      const std::int64_t counted =
          r.backend().cross_entropy_forward(losses, probs, r.upload(logits), t, s.N, s.V);
      if (!backward) {
        r.keep_value("counted", static_cast<double>(counted), K::kExact);
        r.keep("losses", losses, n_of(s.N));
        r.keep("probs", probs, n_of(s.N, s.V));
        return;
      }
      float* dlogits = r.buffer(n_of(s.N, s.V));
      r.backend().cross_entropy_backward(dlogits, probs, t, 1.0f / static_cast<float>(counted), s.N, s.V);
      r.keep("dlogits", dlogits, n_of(s.N, s.V));
    };
    cases.push_back({"cross_entropy_forward", shape, [=](OpRun& r) { run(r, false); }});
    cases.push_back({"cross_entropy_backward", shape, [=](OpRun& r) { run(r, true); }});
  }
  // Class weights: a classifier's few classes, and token classification's many rows.
  for (const Shape s : {Shape{8, 3}, Shape{640, 9}}) {
    const std::string shape = sizes({{"N", s.N}, {"V", s.V}});
    auto targets = random_ints(n_of(s.N), 63, s.V);
    for (std::size_t i = 2; i < targets.size(); i += 4) targets[i] = kIgnoreIndex;
    const auto logits = random_values(n_of(s.N, s.V), 64, 3.0f);
    std::vector<float> weights = random_values(n_of(s.V), 65, 1.0f);
    for (float& w : weights) w = 0.5f + std::fabs(w);
    cases.push_back({"cross_entropy_backward_weighted", shape, [=](OpRun& r) {
                       float* losses = r.buffer(n_of(s.N));
                       float* probs = r.buffer(n_of(s.N, s.V));
                       const std::int32_t* t = r.upload(targets);
                       (void)r.backend().cross_entropy_forward(losses, probs, r.upload(logits), t,
                                                               s.N, s.V);
                       float* dlogits = r.buffer(n_of(s.N, s.V));
                       r.backend().cross_entropy_backward_weighted(
                           dlogits, probs, t, r.upload(weights), 0.125f, s.N, s.V);
                       r.keep("dlogits", dlogits, n_of(s.N, s.V));
                     }});
  }
}

void binary_cross_entropy_cases(std::vector<OpCase>& cases) {
  struct Shape {
    std::int64_t N;
    int K;
  };
  // A multi-label batch; rows past one thread block (the CUDA kernel's thread per row).
  for (const Shape s : {Shape{8, 3}, Shape{700, 5}}) {
    const std::string shape = sizes({{"N", s.N}, {"K", s.K}});
    const auto logits = random_values(n_of(s.N, s.K), 66, 4.0f);
    std::vector<float> targets;
    for (std::int32_t bit : random_ints(n_of(s.N, s.K), 67, 2))
      targets.push_back(static_cast<float>(bit));
    auto run = [=](OpRun& r, bool backward) {
      float* losses = r.buffer(n_of(s.N));
      float* probs = r.buffer(n_of(s.N, s.K));
      const float* y = r.upload(targets);
      r.backend().bce_with_logits_forward(losses, probs, r.upload(logits), y, s.N, s.K);
      if (!backward) {
        r.keep("losses", losses, n_of(s.N));
        r.keep("probs", probs, n_of(s.N, s.K));
        return;
      }
      float* dlogits = r.buffer(n_of(s.N, s.K));
      r.backend().bce_with_logits_backward(dlogits, probs, y, 1.0f / static_cast<float>(s.N * s.K),
                                           s.N, s.K);
      r.keep("dlogits", dlogits, n_of(s.N, s.K));
    };
    cases.push_back({"bce_with_logits_forward", shape, [=](OpRun& r) { run(r, false); }});
    cases.push_back({"bce_with_logits_backward", shape, [=](OpRun& r) { run(r, true); }});
  }
}

void pooling_cases(std::vector<OpCase>& cases) {
  struct Shape { int B, S, offset, C; bool padded; };
  for (const Shape s : {Shape{2, 5, 1, 3, true}, Shape{3, 4, 0, 6, false}, Shape{8, 128, 4, 256, true}}) {
    std::vector<std::int32_t> lengths;
    for (int b = 0; b < s.B; ++b) lengths.push_back(1 + (b * 7 + 3) % (s.S - s.offset));
    for (const PoolMode mode : {PoolMode::kCls, PoolMode::kMean, PoolMode::kLast}) {
      const char* mode_names[] = {" cls", " mean", " last"};
      const std::string shape = sizes({{"B", s.B}, {"S", s.S}, {"offset", s.offset}, {"C", s.C}}) +
                                mode_names[static_cast<int>(mode)] + (s.padded ? " padded" : "");
      cases.push_back({"pool_forward", shape, [=](OpRun& r) {
        float* out = r.buffer(n_of(s.B, s.C));
        r.backend().pool_forward(out, r.upload(random_values(n_of(s.B, s.S, s.C), 71)),
                                 s.padded ? r.upload(lengths) : nullptr, s.B, s.S, s.offset, s.C, mode);
        r.keep("out", out, n_of(s.B, s.C));
      }});
      cases.push_back({"pool_backward", shape, [=](OpRun& r) {
        float* dinp = r.buffer(n_of(s.B, s.S, s.C));
        r.backend().pool_backward(dinp, r.upload(random_values(n_of(s.B, s.C), 72)),
                                  s.padded ? r.upload(lengths) : nullptr, s.B, s.S, s.offset, s.C, mode);
        r.keep("dinp", dinp, n_of(s.B, s.S, s.C));
      }});
    }
  }
}

// ---- dropout and optimizers ------------------------------------------------------------

void dropout_cases(std::vector<OpCase>& cases) {
  for (const std::int64_t N : kElementCounts) {
    // Row offsets: 0 on one process; a rank's first global element under data parallelism.
    const std::uint64_t first = N % 2 == 0 ? 0 : 1000;
    const std::string shape = sizes({{"N", N}}) + " p=0.25 in place first=" + std::to_string(first);
    const auto x = random_values(n_of(N), 81);
    // In place, as the model runs both: masks must depend on (seed, stream, i) only.
    auto run = [=](OpRun& r, bool backward) {
      float* data = r.upload(x);
      float* mask = r.buffer(n_of(N));
      r.backend().dropout_forward(data, mask, data, N, 0.25f, 7, 3, first);
      if (!backward) {
        r.keep("out", data, n_of(N));
        r.keep("mask", mask, n_of(N), K::kExact);
        return;
      }
      float* grad = r.upload(random_values(n_of(N), 82));
      r.backend().dropout_backward(grad, grad, mask, N);
      r.keep("dinp", grad, n_of(N));
    };
    cases.push_back({"dropout_forward", shape, [=](OpRun& r) { run(r, false); }});
    cases.push_back({"dropout_backward", shape, [=](OpRun& r) { run(r, true); }});
  }
}

void optimizer_cases(std::vector<OpCase>& cases) {
  for (const std::int64_t n : kElementCounts) {
    for (const int step : {1, 10}) {
      cases.push_back({"adamw_update", sizes({{"n", n}, {"step", step}}), [=](OpRun& r) {
        float* param = r.upload(random_values(n_of(n), 91));
        float* m = r.upload(random_values(n_of(n), 92, 0.1f));
        std::vector<float> v0 = random_values(n_of(n), 93, 0.01f);
        for (float& x : v0) x = std::fabs(x);  // second moments are never negative
        float* v = r.upload(v0);
        r.backend().adamw_update(param, r.upload(random_values(n_of(n), 94)), m, v, n, 1e-3f, 0.9f,
                                 0.999f, 1e-8f, 0.01f, step);
        r.keep("param", param, n_of(n));
        r.keep("m", m, n_of(n));
        r.keep("v", v, n_of(n));
      }});
    }
    for (const float momentum : {0.0f, 0.9f}) {
      cases.push_back({"sgd_update", sizes({{"n", n}}) + (momentum > 0 ? " momentum=0.9" : " no momentum"),
                       [=](OpRun& r) {
        float* param = r.upload(random_values(n_of(n), 95));
        float* velocity = r.upload(random_values(n_of(n), 96, 0.1f));
        r.backend().sgd_update(param, r.upload(random_values(n_of(n), 97)), velocity, n, 0.05f,
                               momentum, 0.01f);
        r.keep("param", param, n_of(n));
        r.keep("velocity", velocity, n_of(n));
      }});
    }
  }
}

// ---- memory ----------------------------------------------------------------------------

void memory_cases(std::vector<OpCase>& cases) {
  for (const std::int64_t N : kElementCounts) {
    const std::string shape = sizes({{"N", N}}) + " middle half";
    const auto x = random_values(n_of(N), 101);
    const std::size_t begin = n_of(N) / 4, count = n_of(N) / 2;
    cases.push_back({"fill_zero", shape, [=](OpRun& r) {
      float* data = r.upload(x);
      r.backend().fill_zero(data + begin, count * sizeof(float));
      r.keep("data", data, n_of(N), K::kExact);
    }});
    cases.push_back({"copy_to_device", shape, [=](OpRun& r) {
      float* data = r.buffer(n_of(N));
      r.backend().copy_to_device(data + begin, x.data() + begin, count * sizeof(float));
      r.keep("data", data, n_of(N), K::kExact);
    }});
    cases.push_back({"copy_to_host", shape, [=](OpRun& r) {
      std::vector<float> host(n_of(N), kUnwritten);
      r.backend().copy_to_host(host.data() + begin, r.upload(x) + begin, count * sizeof(float));
      r.keep_host("data", std::move(host), K::kExact);
    }});
  }
}

}  // namespace

// ---- the Llama family's ops -------------------------------------------------------------

void rmsnorm_cases(std::vector<OpCase>& cases) {
  struct Shape { std::int64_t N; int C; };
  for (const Shape s : {Shape{6, 10}, Shape{300, 130}, Shape{512, 256}}) {
    const std::string shape = sizes({{"N", s.N}, {"C", s.C}});
    const auto x = random_values(n_of(s.N, s.C), 101, 2.0f);
    const auto w = random_values(n_of(s.C), 102), dout = random_values(n_of(s.N, s.C), 103);
    cases.push_back({"rmsnorm_forward", shape + " eps=1e-6", [=](OpRun& r) {
      float* out = r.buffer(n_of(s.N, s.C));
      float* rstd = r.buffer(n_of(s.N));
      r.backend().rmsnorm_forward(out, rstd, r.upload(x), r.upload(w), s.N, s.C, 1e-6f);
      r.keep("out", out, n_of(s.N, s.C));
      r.keep("rstd", rstd, n_of(s.N));
    }});
    // The backward takes the forward's 1/rms, computed here by the backend itself.
    for (const bool accumulate : {false, true}) {
      cases.push_back({"rmsnorm_backward", shape + (accumulate ? " accumulate" : " assign"),
                       [=](OpRun& r) {
        float* out = r.buffer(n_of(s.N, s.C));
        float* rstd = r.buffer(n_of(s.N));
        const float* inp = r.upload(x);
        const float* weight = r.upload(w);
        r.backend().rmsnorm_forward(out, rstd, inp, weight, s.N, s.C, 1e-6f);
        float* dinp = accumulate ? r.upload(random_values(n_of(s.N, s.C), 104))
                                 : r.buffer(n_of(s.N, s.C));
        float* dweight = r.upload(random_values(n_of(s.C), 105));  // accumulates
        r.backend().rmsnorm_backward(dinp, dweight, r.upload(dout), inp, weight, rstd, s.N, s.C,
                                     accumulate ? GradMode::kAccumulate : GradMode::kAssign);
        r.keep("dinp", dinp, n_of(s.N, s.C));
        r.keep("dweight", dweight, n_of(s.C));
      }});
    }
  }
}

void rope_cases(std::vector<OpCase>& cases) {
  struct Shape { int B, T, NH, D, pos0; float theta, scale; };
  for (const Shape s : {Shape{2, 3, 2, 4, 0, 1e4f, 1.0f}, Shape{4, 64, 4, 32, 8, 5e5f, 2.0f},
                        Shape{8, 128, 8, 64, 0, 1e4f, 1.0f}}) {
    const std::string shape = sizes({{"B", s.B}, {"T", s.T}, {"NH", s.NH}, {"D", s.D},
                                     {"pos0", s.pos0}}) +
                              (s.scale != 1.0f ? " linear x2" : "");
    const std::size_t n = n_of(s.B, s.T, s.NH, s.D);
    const auto x = random_values(n, 111);
    cases.push_back({"rope_forward", shape, [=](OpRun& r) {
      float* out = r.buffer(n);
      r.backend().rope_forward(out, r.upload(x), s.B, s.T, s.NH, s.D, s.pos0, s.theta, s.scale);
      r.keep("out", out, n);
    }});
    cases.push_back({"rope_backward", shape + " in place", [=](OpRun& r) {
      float* grad = r.upload(x);
      r.backend().rope_backward(grad, grad, s.B, s.T, s.NH, s.D, s.pos0, s.theta, s.scale);
      r.keep("dinp", grad, n);
    }});
  }
}

void swiglu_cases(std::vector<OpCase>& cases) {
  for (const std::int64_t N : kElementCounts) {
    const std::string shape = sizes({{"N", N}});
    const auto gate = random_values(n_of(N), 121, 4.0f), up = random_values(n_of(N), 122);
    const auto dout = random_values(n_of(N), 123);
    cases.push_back({"swiglu_forward", shape, [=](OpRun& r) {
      float* out = r.buffer(n_of(N));
      r.backend().swiglu_forward(out, r.upload(gate), r.upload(up), N);
      r.keep("out", out, n_of(N));
    }});
    cases.push_back({"swiglu_backward", shape, [=](OpRun& r) {
      float* dgate = r.buffer(n_of(N));
      float* dup = r.buffer(n_of(N));
      r.backend().swiglu_backward(dgate, dup, r.upload(dout), r.upload(gate), r.upload(up), N);
      r.keep("dgate", dgate, n_of(N));
      r.keep("dup", dup, n_of(N));
    }});
  }
}

// DoRA's magnitude over its weight norm (and IA³-style vectors, divisor null): shapes
// below and above the parallel threshold, assigning and accumulating.
void column_scale_cases(std::vector<OpCase>& cases) {
  struct Shape {
    std::int64_t N;
    int C;
  };
  for (const Shape s : {Shape{3, 5}, Shape{1024, 130}}) {
    const std::size_t n = n_of(s.N, s.C), c = n_of(s.C);
    const auto x = random_values(n, 141), dout = random_values(n, 142),
               base = random_values(n, 143);
    const auto scale = random_values(c, 144);
    std::vector<float> divisor = random_values(c, 145);
    for (float& d : divisor) d = 0.5f + std::fabs(d);  // norms: positive
    for (const bool divided : {false, true}) {
      const std::string shape = sizes({{"N", s.N}, {"C", s.C}}) + (divided ? " divided" : "");
      cases.push_back({"scale_columns", shape, [=](OpRun& r) {
                         float* out = r.buffer(n);
                         r.backend().scale_columns(out, r.upload(x), r.upload(scale),
                                                   divided ? r.upload(divisor) : nullptr, s.N, s.C,
                                                   false);
                         r.keep("out", out, n);
                       }});
      cases.push_back({"scale_columns", shape + " accumulate", [=](OpRun& r) {
                         float* out = r.upload(base);
                         r.backend().scale_columns(out, r.upload(x), r.upload(scale),
                                                   divided ? r.upload(divisor) : nullptr, s.N, s.C,
                                                   true);
                         r.keep("out", out, n);
                       }});
      cases.push_back({"scale_columns_backward", shape, [=](OpRun& r) {
                         float* dinp = r.buffer(n);
                         float* dscale = r.upload(scale);  // accumulates onto these values
                         r.backend().scale_columns_backward(
                             dinp, dscale, r.upload(dout), r.upload(x), r.upload(scale),
                             divided ? r.upload(divisor) : nullptr, s.N, s.C);
                         r.keep("dinp", dinp, n);
                         r.keep("dscale", dscale, c);
                       }});
    }
    cases.push_back({"row_norms", sizes({{"N", s.N}, {"C", s.C}}), [=](OpRun& r) {
                       float* out = r.buffer(n_of(s.N));
                       r.backend().row_norms(out, r.upload(x), s.N, s.C);
                       r.keep("out", out, n_of(s.N));
                     }});
  }
}

void repeat_kv_cases(std::vector<OpCase>& cases) {
  struct Shape { std::int64_t N; int NKV, groups, D; };
  for (const Shape s : {Shape{3, 1, 4, 4}, Shape{512, 2, 2, 32}, Shape{1024, 4, 3, 64}}) {
    const std::string shape =
        sizes({{"N", s.N}, {"NKV", s.NKV}, {"groups", s.groups}, {"D", s.D}});
    const std::size_t narrow = n_of(s.N, s.NKV, s.D), wide = narrow * s.groups;
    const auto x = random_values(narrow, 131), dout = random_values(wide, 132);
    cases.push_back({"repeat_kv_forward", shape, [=](OpRun& r) {
      float* out = r.buffer(wide);
      r.backend().repeat_kv_forward(out, r.upload(x), s.N, s.NKV, s.groups, s.D);
      r.keep("out", out, wide, K::kExact);  // copies
    }});
    cases.push_back({"repeat_kv_backward", shape, [=](OpRun& r) {
      float* dinp = r.buffer(narrow);
      r.backend().repeat_kv_backward(dinp, r.upload(dout), s.N, s.NKV, s.groups, s.D);
      r.keep("dinp", dinp, narrow);
    }});
  }
}

std::vector<OpCase> all_op_cases() {
  std::vector<OpCase> cases;
  embedding_cases(cases);
  layernorm_cases(cases);
  matmul_cases(cases);
  bf16_weight_matmul_cases(cases);
  rmsnorm_cases(cases);
  rope_cases(cases);
  swiglu_cases(cases);
  repeat_kv_cases(cases);
  column_scale_cases(cases);
  attention_cases(cases);
  activation_cases(cases);
  elementwise_cases(cases);
  cross_entropy_cases(cases);
  binary_cross_entropy_cases(cases);
  pooling_cases(cases);
  dropout_cases(cases);
  optimizer_cases(cases);
  memory_cases(cases);
  return cases;
}

}  // namespace scion::test
