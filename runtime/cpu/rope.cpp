#include "runtime/cpu/rope.h"

#include <cmath>
#include <cstddef>
#include <vector>

#include "runtime/cpu/parallel.h"

namespace scion::runtime::cpu {
namespace {

// The angles of every position and pair, in fp32 the way transformers computes them
// (inv_freq = 1 / theta^(2i/D) in fp32, positions divided by the scale in fp32, one fp32
// product), so that imported models match it to the last bits. (T, D/2) cos and sin.
void rotation_table(std::vector<float>& cos_t, std::vector<float>& sin_t, int T, int D,
                    int pos0, float theta, float position_scale) {
  const int half = D / 2;
  std::vector<float> inv_freq(half);
  for (int i = 0; i < half; ++i)
    inv_freq[i] = 1.0f / std::pow(theta, static_cast<float>(2 * i) / static_cast<float>(D));
  cos_t.resize(static_cast<std::size_t>(T) * half);
  sin_t.resize(cos_t.size());
  for (int t = 0; t < T; ++t) {
    const float pos = static_cast<float>(pos0 + t) / position_scale;
    for (int i = 0; i < half; ++i) {
      const float angle = pos * inv_freq[i];
      cos_t[static_cast<std::size_t>(t) * half + i] = std::cos(angle);
      sin_t[static_cast<std::size_t>(t) * half + i] = std::sin(angle);
    }
  }
}

// sign +1: the forward rotation; -1: its inverse.
void rotate(float* out, const float* inp, int B, int T, int NH, int D, int pos0, float theta,
            float position_scale, float sign) {
  std::vector<float> cos_t, sin_t;
  rotation_table(cos_t, sin_t, T, D, pos0, theta, position_scale);
  const int half = D / 2;
  const std::int64_t C = static_cast<std::int64_t>(NH) * D;
#pragma omp parallel for collapse(2) schedule(static) if (worth_parallel(std::int64_t{B} * T * C))
  for (int b = 0; b < B; ++b)
    for (int t = 0; t < T; ++t) {
      const std::size_t row = (static_cast<std::size_t>(b) * T + t) * C;
      const float* c = cos_t.data() + static_cast<std::size_t>(t) * half;
      const float* s = sin_t.data() + static_cast<std::size_t>(t) * half;
      for (int h = 0; h < NH; ++h) {
        const float* x = inp + row + static_cast<std::size_t>(h) * D;
        float* y = out + row + static_cast<std::size_t>(h) * D;
        for (int i = 0; i < half; ++i) {
          const float x1 = x[i], x2 = x[i + half], sn = sign * s[i];
          y[i] = x1 * c[i] - x2 * sn;
          y[i + half] = x2 * c[i] + x1 * sn;
        }
      }
    }
}

}  // namespace

void rope_forward(float* out, const float* inp, int B, int T, int NH, int D, int pos0,
                  float theta, float position_scale) {
  rotate(out, inp, B, T, NH, D, pos0, theta, position_scale, 1.0f);
}

void rope_backward(float* dinp, const float* dout, int B, int T, int NH, int D, int pos0,
                   float theta, float position_scale) {
  rotate(dinp, dout, B, T, NH, D, pos0, theta, position_scale, -1.0f);
}

}  // namespace scion::runtime::cpu
