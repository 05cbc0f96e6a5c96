#include "runtime/cpu/attention.h"

#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <vector>

// The four products per (sequence, head) — scores QKᵀ and the weighted sum PV forward, and
// their gradients backward — run as OpenBLAS GEMMs over the head's strided columns
// (leading dimension C), one (sequence, head) after another, each GEMM using the library's
// threads: plain loops here ran at a fifth of sgemm's speed. Only the softmax and its
// gradient are loops. OpenBLAS splits a product over output blocks, never over the inner
// dimension, so every value is summed in the same order whatever the thread count, and the
// prefix gradients are summed over sequences in a fixed order: results are deterministic.

namespace scion::runtime::cpu {
namespace {

// c (M, N; ldc) = alpha op(a) op(b) + beta c, row-major.
inline void gemm(bool trans_a, bool trans_b, int M, int N, int K, float alpha, const float* a,
                 int lda, const float* b, int ldb, float beta, float* c, int ldc) {
  cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans, trans_b ? CblasTrans : CblasNoTrans,
              M, N, K, alpha, a, lda, b, ldb, beta, c, ldc);
}

}  // namespace

void attention_forward(float* out, float* probs, const float* q, const float* k, const float* v,
                       const float* prefix_k, const float* prefix_v,
                       const std::int32_t* lengths, int B, int T, int P, int C, int NH,
                       bool causal) {
  const int hs = C / NH;
  const int S = P + T;
  const float scale = 1.0f / std::sqrt(static_cast<float>(hs));
  // Scaled scores of every key, prefix keys first: (T, S) per (sequence, head).
  for (int b = 0; b < B; ++b) {
    for (int h = 0; h < NH; ++h) {
      const std::size_t head = static_cast<std::size_t>(b) * T * C + h * hs;
      float* p = probs + (static_cast<std::size_t>(b) * NH + h) * T * S;
      if (P > 0) gemm(false, true, T, P, hs, scale, q + head, C, prefix_k + h * hs, C, 0.0f, p, S);
      gemm(false, true, T, T, hs, scale, q + head, C, k + head, C, 0.0f, p + P, S);
    }
  }
  // Mask and softmax, row by row; masked entries become exactly 0.
#pragma omp parallel for collapse(3) schedule(static)
  for (int b = 0; b < B; ++b) {
    for (int h = 0; h < NH; ++h) {
      for (int t = 0; t < T; ++t) {
        const int length = lengths ? lengths[b] : T;
        const int last_key = causal ? std::min(t + 1, length) : length;  // real keys [0, last)
        const int visible = P + std::max(last_key, 0);                   // keys [0, visible)
        float* p = probs + ((static_cast<std::size_t>(b) * NH + h) * T + t) * S;
        for (int j = visible; j < S; ++j) p[j] = 0.0f;
        if (visible == 0) continue;  // no key at all: a zero output
        float maxval = -INFINITY;
        for (int j = 0; j < visible; ++j) maxval = std::max(maxval, p[j]);
        float sum = 0.0f;
        for (int j = 0; j < visible; ++j) {
          p[j] = std::exp(p[j] - maxval);
          sum += p[j];
        }
        const float inv = 1.0f / sum;
        for (int j = 0; j < visible; ++j) p[j] *= inv;
      }
    }
  }
  // Weighted values: out = P[:, :P] prefix_v + P[:, P:] v.
  for (int b = 0; b < B; ++b) {
    for (int h = 0; h < NH; ++h) {
      const std::size_t head = static_cast<std::size_t>(b) * T * C + h * hs;
      const float* p = probs + (static_cast<std::size_t>(b) * NH + h) * T * S;
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
  // Gradient of the probabilities, then of the scores, of one (sequence, head): (T, S).
  std::vector<float> dscores(static_cast<std::size_t>(T) * S);
  float* ds = dscores.data();
  for (float* dprefix : {dprefix_k, dprefix_v})
    if (dprefix && P > 0) std::fill(dprefix, dprefix + static_cast<std::size_t>(P) * C, 0.0f);
  for (int b = 0; b < B; ++b) {
    for (int h = 0; h < NH; ++h) {
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
    }
  }
}

}  // namespace scion::runtime::cpu
