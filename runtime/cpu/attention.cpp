#include "runtime/cpu/attention.h"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <vector>

#include "runtime/cpu/gemm.h"
#include "runtime/cpu/parallel.h"
#include "runtime/cpu/softmax.h"

// The four products per (sequence, head) — scores QKᵀ and the weighted sum PV forward, and
// their gradients backward — run as serial OpenBLAS GEMMs over the head's strided columns
// (leading dimension C), with the (sequence, head) pairs spread over the OpenMP team: one
// pair's scores stay in cache from their product through the softmax to the next product.
// Prefix gradients are sums over sequences; when they are wanted, threads take whole heads
// and walk the sequences in order, so every value is summed in the same order whatever the
// thread count: results are deterministic.

namespace scion::runtime::cpu {
namespace {

inline void gemm(bool trans_a, bool trans_b, int M, int N, int K, float alpha, const float* a,
                 int lda, const float* b, int ldb, float beta, float* c, int ldc) {
  gemm_serial(trans_a, trans_b, M, N, K, alpha, a, lda, b, ldb, beta, c, ldc);
}

}  // namespace

void attention_forward(float* out, float* probs, const float* q, const float* k, const float* v,
                       const float* prefix_k, const float* prefix_v,
                       const std::int32_t* lengths, int B, int T, int P, int C, int NH,
                       bool causal) {
  const int hs = C / NH;
  const int S = P + T;
  const float scale = 1.0f / std::sqrt(static_cast<float>(hs));
#pragma omp parallel for collapse(2) schedule(static) if (worth_parallel(std::int64_t{B} * T * S * NH))
  for (int b = 0; b < B; ++b) {
    for (int h = 0; h < NH; ++h) {
      const std::size_t head = static_cast<std::size_t>(b) * T * C + h * hs;
      float* p = probs + (static_cast<std::size_t>(b) * NH + h) * T * S;
      // Scaled scores of every key, prefix keys first: (T, S).
      if (P > 0) gemm(false, true, T, P, hs, scale, q + head, C, prefix_k + h * hs, C, 0.0f, p, S);
      gemm(false, true, T, T, hs, scale, q + head, C, k + head, C, 0.0f, p + P, S);
      const int length = lengths ? lengths[b] : T;
      for (int t = 0; t < T; ++t) {
        const int last_key = causal ? std::min(t + 1, length) : length;  // real keys [0, last)
        softmax_row(p + static_cast<std::size_t>(t) * S, P + std::max(last_key, 0), S);
      }
      // Weighted values: out = P[:, :P] prefix_v + P[:, P:] v.
      if (P > 0) gemm(false, false, T, hs, P, 1.0f, p, S, prefix_v + h * hs, C, 0.0f, out + head, C);
      gemm(false, false, T, hs, T, 1.0f, p + P, S, v + head, C, P > 0 ? 1.0f : 0.0f, out + head, C);
    }
  }
}

void attention_backward(float* dq, float* dk, float* dv, float* dprefix_k, float* dprefix_v,
                        const float* dout, const float* probs, const float* q, const float* k,
                        const float* v, const float* prefix_k, const float* prefix_v, int B,
                        int T, int P, int C, int NH) {
  const int hs = C / NH;
  const int S = P + T;
  const float scale = 1.0f / std::sqrt(static_cast<float>(hs));
  for (float* dprefix : {dprefix_k, dprefix_v})
    if (dprefix && P > 0) std::fill(dprefix, dprefix + static_cast<std::size_t>(P) * C, 0.0f);
  // One (sequence, head): ds is (T, S) scratch for the gradient of probabilities, then scores.
  auto one = [&](int b, int h, float* ds) {
    const std::size_t head = static_cast<std::size_t>(b) * T * C + h * hs;
    const float* p = probs + (static_cast<std::size_t>(b) * NH + h) * T * S;
    // dP = dout vᵀ (prefix values first); dv = P[:, P:]ᵀ dout, dprefix_v += P[:, :P]ᵀ dout
    if (P > 0) gemm(false, true, T, P, hs, 1.0f, dout + head, C, prefix_v + h * hs, C, 0.0f, ds, S);
    gemm(false, true, T, T, hs, 1.0f, dout + head, C, v + head, C, 0.0f, ds + P, S);
    gemm(true, false, T, hs, T, 1.0f, p + P, S, dout + head, C, 0.0f, dv + head, C);
    if (P > 0 && dprefix_v)
      gemm(true, false, P, hs, T, 1.0f, p, S, dout + head, C, 1.0f, dprefix_v + h * hs, C);
    // Softmax backward, through the scale: dS = P ⊙ (dP − Σ_j P dP) / sqrt(hs).
    for (int t = 0; t < T; ++t) {
      const float* pt = p + static_cast<std::size_t>(t) * S;
      float* dst = ds + static_cast<std::size_t>(t) * S;
      float weighted = 0.0f;
      for (int j = 0; j < S; ++j) weighted += pt[j] * dst[j];
      for (int j = 0; j < S; ++j) dst[j] = pt[j] * (dst[j] - weighted) * scale;
    }
    // dq = dS k (prefix keys included); dk = dS[:, P:]ᵀ q, dprefix_k += dS[:, :P]ᵀ q
    gemm(false, false, T, hs, T, 1.0f, ds + P, S, k + head, C, 0.0f, dq + head, C);
    if (P > 0) gemm(false, false, T, hs, P, 1.0f, ds, S, prefix_k + h * hs, C, 1.0f, dq + head, C);
    gemm(true, false, T, hs, T, 1.0f, ds + P, S, q + head, C, 0.0f, dk + head, C);
    if (P > 0 && dprefix_k)
      gemm(true, false, P, hs, T, 1.0f, ds, S, q + head, C, 1.0f, dprefix_k + h * hs, C);
  };
  const bool prefix_grads = P > 0 && (dprefix_k || dprefix_v);
#pragma omp parallel if (worth_parallel(std::int64_t{B} * T * S * NH))
  {
    std::vector<float> ds(static_cast<std::size_t>(T) * S);
    if (prefix_grads) {
#pragma omp for schedule(static)
      for (int h = 0; h < NH; ++h)
        for (int b = 0; b < B; ++b) one(b, h, ds.data());
    } else {
#pragma omp for collapse(2) schedule(static)
      for (int b = 0; b < B; ++b)
        for (int h = 0; h < NH; ++h) one(b, h, ds.data());
    }
  }
}

}  // namespace scion::runtime::cpu
