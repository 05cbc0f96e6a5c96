// Where a resolved model's text starts in the learned position table and how much of
// max_length its text may take (spec/text_positions.h gives the rule).
#pragma once

#include "runtime/model/model_weights.h"

namespace scion::runtime {

// Positions the text starts later because of prefix tuning on an imported BERT, RoBERTa
// or GPT-2 trunk: the embeddings add position rows from this one on, as transformers
// does behind PEFT's past_key_values. The most prefix tokens any block holds (the same
// count as spec::prefix_position_shift); 0 on native trunks and with rotary positions.
int position_shift(const ModelWeights& w);

// Positions taken before the text's first token: prompt tokens and the shift above. A
// text may hold arch.max_length less these.
int positions_before_text(const ModelWeights& w);

}  // namespace scion::runtime
