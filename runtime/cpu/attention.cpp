#include "runtime/cpu/attention.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <vector>

// The head-size loops carry `omp simd reduction` so GCC vectorises the dot products
// (plain float reductions stay scalar without -ffast-math); the order of the partial
// sums is fixed at compile time, so results stay deterministic.

namespace scion::runtime::cpu {
namespace {

// Key j of the extended sequence (prefix first): its row in k/v or the prefix.
inline const float* key_row(const float* x, const float* prefix, int b, int j, int T, int P,
                            int C, int h, int hs) {
  if (j < P) return prefix + static_cast<std::size_t>(j) * C + h * hs;
  return x + (static_cast<std::size_t>(b) * T + (j - P)) * C + h * hs;
}

}  // namespace

void attention_forward(float* out, float* probs, const float* q, const float* k, const float* v,
                       const float* prefix_k, const float* prefix_v,
                       const std::int32_t* lengths, int B, int T, int P, int C, int NH,
                       bool causal) {
  const int hs = C / NH;
  const int S = P + T;
  const float scale = 1.0f / std::sqrt(static_cast<float>(hs));
#pragma omp parallel for collapse(3) schedule(static)
  for (int b = 0; b < B; ++b) {
    for (int h = 0; h < NH; ++h) {
      for (int t = 0; t < T; ++t) {
        const int length = lengths ? lengths[b] : T;
        const int last_key = causal ? std::min(t + 1, length) : length;  // real keys [0, last)
        const float* qt = q + (static_cast<std::size_t>(b) * T + t) * C + h * hs;
        float* p = probs + ((static_cast<std::size_t>(b) * NH + h) * T + t) * S;
        float maxval = -INFINITY;
        for (int j = 0; j < S; ++j) {
          const bool visible = j < P || (j - P) < last_key;
          if (!visible) {
            p[j] = -INFINITY;
            continue;
          }
          const float* kj = key_row(k, prefix_k, b, j, T, P, C, h, hs);
          float dot = 0.0f;
#pragma omp simd reduction(+ : dot)
          for (int i = 0; i < hs; ++i) dot += qt[i] * kj[i];
          p[j] = dot * scale;
          maxval = std::max(maxval, p[j]);
        }
        float* o = out + (static_cast<std::size_t>(b) * T + t) * C + h * hs;
        for (int i = 0; i < hs; ++i) o[i] = 0.0f;
        if (maxval == -INFINITY) {
          for (int j = 0; j < S; ++j) p[j] = 0.0f;
          continue;
        }
        float sum = 0.0f;
        for (int j = 0; j < S; ++j) {
          p[j] = p[j] == -INFINITY ? 0.0f : std::exp(p[j] - maxval);
          sum += p[j];
        }
        const float inv = 1.0f / sum;
        for (int j = 0; j < S; ++j) {
          p[j] *= inv;
          if (p[j] == 0.0f) continue;
          const float* vj = key_row(v, prefix_v, b, j, T, P, C, h, hs);
          for (int i = 0; i < hs; ++i) o[i] += p[j] * vj[i];
        }
      }
    }
  }
}

// Parallel over (b, h): each task owns the dq/dk/dv columns of its head in its sequence,
// so no two threads write the same value. Prefix gradients are shared by every b, so each
// (b, h) task writes a private slot and the slots are summed in a fixed order afterwards.
void attention_backward(float* dq, float* dk, float* dv, float* dprefix_k, float* dprefix_v,
                        const float* dout, const float* probs, const float* q, const float* k,
                        const float* v, const float* prefix_k, const float* prefix_v, int B,
                        int T, int P, int C, int NH) {
  const int hs = C / NH;
  const int S = P + T;
  const float scale = 1.0f / std::sqrt(static_cast<float>(hs));
  std::vector<float> prefix_slots(static_cast<std::size_t>(B) * NH * P * hs * 2, 0.0f);
#pragma omp parallel for collapse(2) schedule(static)
  for (int b = 0; b < B; ++b) {
    for (int h = 0; h < NH; ++h) {
      float* slot_k = prefix_slots.data() + (static_cast<std::size_t>(b) * NH + h) * P * hs * 2;
      float* slot_v = slot_k + static_cast<std::size_t>(P) * hs;
      std::vector<float> dscore(S);
      for (int t = 0; t < T; ++t) {
        float* dqt = dq + (static_cast<std::size_t>(b) * T + t) * C + h * hs;
        float* dkt = dk + (static_cast<std::size_t>(b) * T + t) * C + h * hs;
        float* dvt = dv + (static_cast<std::size_t>(b) * T + t) * C + h * hs;
        for (int i = 0; i < hs; ++i) dqt[i] = dkt[i] = dvt[i] = 0.0f;
      }
      for (int t = 0; t < T; ++t) {
        const float* p = probs + ((static_cast<std::size_t>(b) * NH + h) * T + t) * S;
        const float* dot = dout + (static_cast<std::size_t>(b) * T + t) * C + h * hs;
        const float* qt = q + (static_cast<std::size_t>(b) * T + t) * C + h * hs;
        float* dqt = dq + (static_cast<std::size_t>(b) * T + t) * C + h * hs;
        // dprob_j = dout · v_j ; dv_j += p_j dout
        float weighted = 0.0f;
        for (int j = 0; j < S; ++j) {
          if (p[j] == 0.0f) {
            dscore[j] = 0.0f;
            continue;
          }
          const float* vj = key_row(v, prefix_v, b, j, T, P, C, h, hs);
          float* dvj = j < P ? slot_v + static_cast<std::size_t>(j) * hs
                             : dv + (static_cast<std::size_t>(b) * T + (j - P)) * C + h * hs;
          float dp = 0.0f;
#pragma omp simd reduction(+ : dp)
          for (int i = 0; i < hs; ++i) {
            dp += dot[i] * vj[i];
            dvj[i] += p[j] * dot[i];
          }
          dscore[j] = dp;
          weighted += p[j] * dp;
        }
        // softmax backward, then through the scaled dot product
        for (int j = 0; j < S; ++j) {
          if (p[j] == 0.0f) continue;
          const float ds = p[j] * (dscore[j] - weighted) * scale;
          const float* kj = key_row(k, prefix_k, b, j, T, P, C, h, hs);
          float* dkj = j < P ? slot_k + static_cast<std::size_t>(j) * hs
                             : dk + (static_cast<std::size_t>(b) * T + (j - P)) * C + h * hs;
          for (int i = 0; i < hs; ++i) {
            dqt[i] += ds * kj[i];
            dkj[i] += ds * qt[i];
          }
        }
      }
    }
  }
  for (float* dprefix : {dprefix_k, dprefix_v}) {
    if (!dprefix) continue;
    const int which = dprefix == dprefix_k ? 0 : 1;
    for (int j = 0; j < P; ++j)
      for (int h = 0; h < NH; ++h)
        for (int i = 0; i < hs; ++i) {
          float sum = 0.0f;
          for (int b = 0; b < B; ++b)
            sum += prefix_slots[((static_cast<std::size_t>(b) * NH + h) * 2 + which) * P * hs +
                                static_cast<std::size_t>(j) * hs + i];
          dprefix[static_cast<std::size_t>(j) * C + h * hs + i] = sum;
        }
  }
}

}  // namespace scion::runtime::cpu
