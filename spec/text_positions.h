// Where a text's learned positions start when prefix tuning runs before it.
//
// PEFT passes prefix tuning's virtual tokens to transformers as past_key_values, and
// transformers then numbers the text after them: BertEmbeddings takes
// position_ids[past : past + T], RoBERTa numbers from padding_idx + 1 + past, GPT2Model
// from arange(past, past + T), and Llama's rotary positions start at past too. On an
// imported Hugging Face base scion does the same, so that a prefix it trains is the
// adapter PEFT runs (docs/hugging-face.md). Rotary positions already start after each
// block's prefix (runtime/model/transformer_pass.h); learned ones are shifted at the
// embeddings by the count below. Native models keep their text at positions 0, 1, ...
// beside a prefix: their recipes, stores and trained models predate the rule.
#pragma once

#include <vector>

#include "spec/workspace.h"

namespace scion::spec {

// Whether prefix tuning moves the text's learned positions on this architecture: an
// imported Hugging Face base (BERT, MiniLM, RoBERTa, GPT-2) with learned positions.
bool prefix_shifts_positions(const Architecture& arch);

// How many positions the text starts later: where prefix_shifts_positions, the most
// prefix virtual tokens any block holds, over the prefixes of `chain` (a model and its
// ancestors, any order) and the layers each covers; else 0. With prefixes on every layer
// (the only ones PEFT exports) that is their virtual tokens summed, PEFT's past length.
int prefix_position_shift(const Architecture& arch, const std::vector<const Model*>& chain);
int prefix_position_shift(const Workspace& ws, const Model& model);

}  // namespace scion::spec
