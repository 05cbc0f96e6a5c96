// A LoRA (or DoRA) folded into the weight it adapts, on the host: the one definition both
// merge paths use (runtime::merge_lora for a stored family, workbench/hf_export.cpp for a
// model folder), so that a merged model computes what the unmerged one does.
//
// weight (out, in) becomes W + s·B·A, A (rank, in), B (out, rank); with DoRA (`magnitude`
// not null, (out)) each row o then becomes m[o] / ‖row o‖ · row o: the norm of W + s·B·A,
// as PEFT 0.10's LoraLayer.merge computes it. Sums in float, k innermost.
#pragma once

#include <cstdint>

namespace scion::runtime {

void fold_lora(float* weight, const float* a, const float* b, const float* magnitude, float scale,
               std::int64_t out, std::int64_t in, std::int64_t rank);

}  // namespace scion::runtime
