// The Llama family's element-wise ops: rotary positions (runtime/cpu/rope.h) and
// grouped-query attention's shared key/value heads (runtime/cpu/grouped_kv.h).
#include "runtime/cuda/device_math.cuh"
#include "runtime/cuda/kernels.h"

namespace scion::runtime::cuda {
namespace {

// One thread per rotated pair (b, t, h, i < D/2). The angle is computed as the CPU's
// table computes it (inv_freq = 1 / theta^(2i/D), position / scale, one fp32 product);
// powf, cosf and sinf on the device agree with glibc's to an ulp or two. sign -1 is the
// inverse rotation (the backward). out may equal inp: a thread reads its pair first.
void rotate(float* out, const float* inp, int B, int T, int NH, int D, int pos0, float theta,
            float position_scale, float sign, cudaStream_t stream) {
  const int half = D / 2;
  const std::int64_t pairs = static_cast<std::int64_t>(B) * T * NH * half;
  for_each_index(pairs, stream, [=] __device__(std::int64_t idx) {
    const int i = static_cast<int>(idx % half);
    const std::int64_t head_row = idx / half;  // (b, t, h)
    const int t = static_cast<int>((head_row / NH) % T);
    const float inv_freq =
        1.0f / powf(theta, static_cast<float>(2 * i) / static_cast<float>(D));
    const float angle = (static_cast<float>(pos0 + t) / position_scale) * inv_freq;
    const float c = cosf(angle), sn = sign * sinf(angle);
    const float* x = inp + head_row * D;
    float* y = out + head_row * D;
    const float x1 = x[i], x2 = x[i + half];
    y[i] = x1 * c - x2 * sn;
    y[i + half] = x2 * c + x1 * sn;
  });
}

}  // namespace

void rope_forward(float* out, const float* inp, int B, int T, int NH, int D, int pos0,
                  float theta, float position_scale, cudaStream_t stream) {
  rotate(out, inp, B, T, NH, D, pos0, theta, position_scale, 1.0f, stream);
}

void rope_backward(float* dinp, const float* dout, int B, int T, int NH, int D, int pos0,
                   float theta, float position_scale, cudaStream_t stream) {
  rotate(dinp, dout, B, T, NH, D, pos0, theta, position_scale, -1.0f, stream);
}

void repeat_kv_forward(float* out, const float* inp, std::int64_t N, int NKV, int groups, int D,
                       cudaStream_t stream) {
  const std::int64_t in_width = static_cast<std::int64_t>(NKV) * D;
  const std::int64_t out_width = in_width * groups;
  for_each_index(N * out_width, stream, [=] __device__(std::int64_t i) {
    const std::int64_t n = i / out_width;
    const std::int64_t within = i % out_width;
    const std::int64_t h = within / D, d = within % D;
    out[i] = inp[n * in_width + (h / groups) * D + d];
  });
}

// Each input element sums its `groups` copies' gradients in order (no atomics).
void repeat_kv_backward(float* dinp, const float* dout, std::int64_t N, int NKV, int groups,
                        int D, cudaStream_t stream) {
  const std::int64_t in_width = static_cast<std::int64_t>(NKV) * D;
  const std::int64_t out_width = in_width * groups;
  for_each_index(N * in_width, stream, [=] __device__(std::int64_t i) {
    const std::int64_t n = i / in_width;
    const std::int64_t within = i % in_width;
    const std::int64_t kv = within / D, d = within % D;
    float sum = 0.0f;
    for (int r = 0; r < groups; ++r) sum += dout[n * out_width + (kv * groups + r) * D + d];
    dinp[i] = sum;
  });
}

}  // namespace scion::runtime::cuda
