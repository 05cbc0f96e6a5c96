// Rotary position embeddings (RoPE) as Hugging Face's Llama applies them to queries and
// keys: within each head of D channels, channel i < D/2 and channel i + D/2 form a pair
// rotated by the angle (pos / position_scale) · theta^(-2i/D):
//   out[i]       = x[i] cos − x[i + D/2] sin
//   out[i + D/2] = x[i + D/2] cos + x[i] sin
// (rotate_half). Rows are (B, T, NH·D); the row of sequence b, position t is at pos =
// pos0 + t (pos0: tokens before it, such as prefix keys). position_scale is 1 without
// rope_scaling and the factor of linear scaling. inp may equal out (in place).
//
// Backward rotates by the opposite angle, the inverse (and transpose) of the forward
// rotation: dinp is assigned (=); dinp may equal dout.
#pragma once

#include <cstdint>

namespace scion::runtime::cpu {

void rope_forward(float* out, const float* inp, int B, int T, int NH, int D, int pos0,
                  float theta, float position_scale);

void rope_backward(float* dinp, const float* dout, int B, int T, int NH, int D, int pos0,
                   float theta, float position_scale);

}  // namespace scion::runtime::cpu
