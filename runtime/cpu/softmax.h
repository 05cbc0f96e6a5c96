// The softmax of one row of attention scores, in place (its own file so that
// bench/onednn_primitives.cpp can set it against oneDNN's softmax).
#pragma once

namespace scion::runtime::cpu {

// Masks and normalises one row of S scores in place: entries [visible, S) become exactly 0,
// and a row with no visible entry becomes all 0.
void softmax_row(float* p, int visible, int S);

}  // namespace scion::runtime::cpu
