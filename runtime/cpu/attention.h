// Multi-head scaled dot-product attention over one segment of B sequences of T positions,
// with optional per-segment prefix keys/values (prefix tuning) visible to every query.
//
// q, k, v, out: (B, T, C) with NH heads of C/NH channels. prefix_k, prefix_v: (P, C),
// shared by the B rows of the segment (null when P = 0). probs: (B, NH, T, P+T), saved
// for backward; masked entries are exactly 0.
// Mask: query t sees every prefix key, and key t' when t' < lengths[b] (padding; lengths
// null means all T are real) and, if causal, t' <= t. A causal query with a sliding
// window (window > 0; Mistral's) sees only the keys at most `window` positions before its
// own, counting the prefix keys as positions 0 ... P-1 and query t as position P + t (as
// transformers 4.40 masks past_key_values): key s of [0, P+T) when P + t - s <= window.
// A query with no visible key (only possible at padded positions) gets a zero output.
// Gradients: dq, dk, dv are assigned (=); dprefix_k, dprefix_v are assigned (=) too: the
// model adds them to the owners' parameter gradients (a prefix may be the concatenation
// of several models' prefixes). Any of dprefix_* may be null.
//
// Precision: the products (scores QKᵀ, mixing PV and their gradients) run as `products`
// says (head_products.h: fp32 on OpenBLAS or oneDNN, or bf16 operands with fp32
// accumulation); the softmax, its gradient and every output and saved value are fp32.
#pragma once

#include <cstdint>

#include "runtime/cpu/head_products.h"

namespace scion::runtime::cpu {

void attention_forward(float* out, float* probs, const float* q, const float* k, const float* v,
                       const float* prefix_k, const float* prefix_v, const std::int32_t* lengths,
                       int B, int T, int P, int C, int NH, bool causal, int window,
                       const HeadProducts& products);

void attention_backward(float* dq, float* dk, float* dv, float* dprefix_k, float* dprefix_v,
                        const float* dout, const float* probs, const float* q, const float* k,
                        const float* v, const float* prefix_k, const float* prefix_v, int B, int T,
                        int P, int C, int NH, const HeadProducts& products);

}  // namespace scion::runtime::cpu
