// The trie of layer applications of a family batch (transformer.h: share_identical).
//
// Stage 0 is the embeddings, stage l + 1 is block l. At each stage a segment joins the
// first unit whose input (the unit it came from) and parameters equal its own, or starts
// a new unit; a unit's rows are computed once for every segment that shares it. Without
// share_identical every segment is its own unit at every stage, over its own rows.
// Parameters are compared by buffer: the parameter pool holds one buffer per digest.
#pragma once

#include <cstdint>
#include <vector>

#include "runtime/model/family_batch.h"

namespace scion::runtime::detail {

// One node of the trie: rows computed once for every segment that shares it.
struct Unit {
  int segment = 0;                  // the segment whose adapters and buffers it applies
  std::int64_t row0 = 0, rows = 0;  // its rows in the stage's activations
  std::int64_t probs0 = 0;          // offset into the block's attention probabilities
  int parent = 0;                   // the unit of the previous stage that feeds it
};
using Stage = std::vector<Unit>;  // stages[0]: embeddings; stages[l + 1]: block l

// The stages of `batch`; `final_unit` receives each segment's unit in the last stage.
// REQUIRES: batch has at least one segment.
std::vector<Stage> build_stages(const FamilyBatch& batch, std::vector<int>& final_unit);

// Rows computed at one stage (all the batch's rows without sharing).
std::int64_t stage_rows(const Stage& stage);

// Attention probabilities one segment's rows take in `block`: (B, heads, S, Pf + S), with
// S its prompt rows and tokens; with a cache, (B, heads, S, prefix rows + capacity).
std::int64_t segment_probs(const Segment& seg, int block);

// Attention probabilities of every unit of a block's stage.
std::int64_t stage_probs(const Stage& stage, const FamilyBatch& batch, int block);

}  // namespace scion::runtime::detail
