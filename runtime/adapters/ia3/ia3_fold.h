// (IA)³ folded into the linear layer it scales, on the host, as PEFT 0.10's
// IA3Layer.merge does: the one merge that --format huggingface (workbench/hf_export.cpp)
// and a descendant's merged PEFT base use.
//
//   output scaling: W[o, :] *= l[o] and b[o] *= l[o]
//   input scaling:  W[:, i] *= l[i]  (the bias is not scaled)
//
// W is (out, in), row-major; bias may be null.
#pragma once

#include <cstdint>

namespace scion::runtime {

void fold_ia3(float* weight, float* bias, const float* scale, bool on_input, std::int64_t out,
              std::int64_t in);

}  // namespace scion::runtime
