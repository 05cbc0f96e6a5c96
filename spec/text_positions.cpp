#include "spec/text_positions.h"

#include <algorithm>

namespace scion::spec {

bool prefix_shifts_positions(const Architecture& arch) {
  return !arch.hf_model_type.empty() && arch.positions == PositionKind::kLearned;
}

int prefix_position_shift(const Architecture& arch, const std::vector<const Model*>& chain) {
  if (!prefix_shifts_positions(arch)) return 0;
  int most = 0;
  for (int l = 0; l < arch.layers; ++l) {
    int tokens = 0;
    for (const Model* m : chain) {
      if (!m->adaptation.prefix) continue;
      const std::vector<int>& layers = m->adaptation.prefix->layers;
      if (layers.empty() || std::find(layers.begin(), layers.end(), l) != layers.end())
        tokens += m->adaptation.prefix->virtual_tokens;
    }
    most = std::max(most, tokens);
  }
  return most;
}

int prefix_position_shift(const Workspace& ws, const Model& model) {
  return prefix_position_shift(ws.architecture_of(model), ws.ancestry(model));
}

}  // namespace scion::spec
