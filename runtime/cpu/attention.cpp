#include "runtime/cpu/attention.h"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <vector>

#include "runtime/cpu/parallel.h"
#include "runtime/cpu/softmax.h"

// The products per (sequence, head) — scores QKᵀ and the weighted sum PV forward, and
// their gradients backward — run serially through HeadProducts over the head's strided
// columns (leading dimension C), with the (sequence, head) pairs spread over the OpenMP
// team: one pair's scores stay in cache from their product through the softmax to the
// next product, and in bf16 each operand is rounded as it is packed, right before the
// product that reads it (the probabilities and score gradients right after the loops
// that write them, while they are in cache).
// Prefix gradients are sums over sequences; when they are wanted, threads take whole heads
// and walk the sequences in order, so every value is summed in the same order whatever the
// thread count: results are deterministic.

namespace scion::runtime::cpu {
namespace {

// Scratch slots of HeadProducts::operand, one per operand a head's products read.
enum Slot { kQ, kK, kV, kPrefixK, kPrefixV, kProbs, kDout, kScoreGrad };

// (T, S) floats of the calling thread, kept for its life so that backward allocates
// nothing per call.
float* thread_scores(std::int64_t n) {
  thread_local std::vector<float> ds;
  if (ds.size() < static_cast<std::size_t>(n)) ds.resize(static_cast<std::size_t>(n));
  return ds.data();
}

}  // namespace

void attention_forward(float* out, float* probs, const float* q, const float* k, const float* v,
                       const float* prefix_k, const float* prefix_v, const std::int32_t* lengths,
                       int B, int T, int P, int C, int NH, bool causal, int window,
                       const HeadProducts& hp) {
  const int hs = C / NH;
  const int S = P + T;
  const float scale = 1.0f / std::sqrt(static_cast<float>(hs));
#pragma omp parallel for collapse(2) \
    schedule(static) if (worth_parallel(std::int64_t{B} * T * S * NH))
  for (int b = 0; b < B; ++b) {
    for (int h = 0; h < NH; ++h) {
      const std::size_t head = static_cast<std::size_t>(b) * T * C + h * hs;
      float* p = probs + (static_cast<std::size_t>(b) * NH + h) * T * S;
      // Scaled scores of every key, prefix keys first: (T, S).
      const HeadOperand qh = hp.operand(kQ, q + head, T, hs, C);
      if (P > 0)
        hp.gemm(false, true, T, P, hs, scale, qh, hp.operand(kPrefixK, prefix_k + h * hs, P, hs, C),
                0.0f, p, S);
      hp.gemm(false, true, T, T, hs, scale, qh, hp.operand(kK, k + head, T, hs, C), 0.0f, p + P, S);
      const int length = lengths ? lengths[b] : T;
      for (int t = 0; t < T; ++t) {
        const int last_key = causal ? std::min(t + 1, length) : length;  // real keys [0, last)
        // Keys before the sliding window: [0, first) of the row, prefix keys first.
        const int first = causal && window > 0 ? std::clamp(P + t - window, 0, S) : 0;
        float* row = p + static_cast<std::size_t>(t) * S;
        std::fill(row, row + first, 0.0f);
        softmax_row(row + first, std::max(P + std::max(last_key, 0) - first, 0), S - first);
      }
      // Weighted values: out = P[:, :P] prefix_v + P[:, P:] v.
      const HeadOperand ph = hp.operand(kProbs, p, T, S, S);
      if (P > 0)
        hp.gemm(false, false, T, hs, P, 1.0f, ph, hp.operand(kPrefixV, prefix_v + h * hs, P, hs, C),
                0.0f, out + head, C);
      hp.gemm(false, false, T, hs, T, 1.0f, hp.columns_from(ph, P),
              hp.operand(kV, v + head, T, hs, C), P > 0 ? 1.0f : 0.0f, out + head, C);
    }
  }
}

void attention_backward(float* dq, float* dk, float* dv, float* dprefix_k, float* dprefix_v,
                        const float* dout, const float* probs, const float* q, const float* k,
                        const float* v, const float* prefix_k, const float* prefix_v, int B, int T,
                        int P, int C, int NH, const HeadProducts& hp) {
  const int hs = C / NH;
  const int S = P + T;
  const float scale = 1.0f / std::sqrt(static_cast<float>(hs));
  for (float* dprefix : {dprefix_k, dprefix_v})
    if (dprefix && P > 0) std::fill(dprefix, dprefix + static_cast<std::size_t>(P) * C, 0.0f);
  // One (sequence, head): ds is (T, S) scratch for the gradient of probabilities, then scores.
  auto one = [&](int b, int h, float* ds) {
    const std::size_t head = static_cast<std::size_t>(b) * T * C + h * hs;
    const float* p = probs + (static_cast<std::size_t>(b) * NH + h) * T * S;
    const HeadOperand douth = hp.operand(kDout, dout + head, T, hs, C);
    const HeadOperand ph = hp.operand(kProbs, p, T, S, S);
    // dP = dout vᵀ (prefix values first); dv = P[:, P:]ᵀ dout, dprefix_v += P[:, :P]ᵀ dout
    if (P > 0)
      hp.gemm(false, true, T, P, hs, 1.0f, douth, hp.operand(kPrefixV, prefix_v + h * hs, P, hs, C),
              0.0f, ds, S);
    hp.gemm(false, true, T, T, hs, 1.0f, douth, hp.operand(kV, v + head, T, hs, C), 0.0f, ds + P,
            S);
    hp.gemm(true, false, T, hs, T, 1.0f, hp.columns_from(ph, P), douth, 0.0f, dv + head, C);
    if (P > 0 && dprefix_v)
      hp.gemm(true, false, P, hs, T, 1.0f, ph, douth, 1.0f, dprefix_v + h * hs, C);
    // Softmax backward, through the scale: dS = P ⊙ (dP − Σ_j P dP) / sqrt(hs).
    for (int t = 0; t < T; ++t) {
      const float* pt = p + static_cast<std::size_t>(t) * S;
      float* dst = ds + static_cast<std::size_t>(t) * S;
      float weighted = 0.0f;
      for (int j = 0; j < S; ++j) weighted += pt[j] * dst[j];
      for (int j = 0; j < S; ++j) dst[j] = pt[j] * (dst[j] - weighted) * scale;
    }
    // dq = dS k (prefix keys included); dk = dS[:, P:]ᵀ q, dprefix_k += dS[:, :P]ᵀ q
    const HeadOperand dsh = hp.operand(kScoreGrad, ds, T, S, S);
    const HeadOperand qh = hp.operand(kQ, q + head, T, hs, C);
    hp.gemm(false, false, T, hs, T, 1.0f, hp.columns_from(dsh, P),
            hp.operand(kK, k + head, T, hs, C), 0.0f, dq + head, C);
    if (P > 0)
      hp.gemm(false, false, T, hs, P, 1.0f, dsh, hp.operand(kPrefixK, prefix_k + h * hs, P, hs, C),
              1.0f, dq + head, C);
    hp.gemm(true, false, T, hs, T, 1.0f, hp.columns_from(dsh, P), qh, 0.0f, dk + head, C);
    if (P > 0 && dprefix_k)
      hp.gemm(true, false, P, hs, T, 1.0f, dsh, qh, 1.0f, dprefix_k + h * hs, C);
  };
  const bool prefix_grads = P > 0 && (dprefix_k || dprefix_v);
#pragma omp parallel if (worth_parallel(std::int64_t{B} * T * S * NH))
  {
    float* ds = thread_scores(static_cast<std::int64_t>(T) * S);
    if (prefix_grads) {
#pragma omp for schedule(static)
      for (int h = 0; h < NH; ++h)
        for (int b = 0; b < B; ++b) one(b, h, ds);
    } else {
#pragma omp for collapse(2) schedule(static)
      for (int b = 0; b < B; ++b)
        for (int h = 0; h < NH; ++h) one(b, h, ds);
    }
  }
}

}  // namespace scion::runtime::cpu
