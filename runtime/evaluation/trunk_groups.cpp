#include "runtime/evaluation/trunk_groups.h"

#include <map>

namespace scion::runtime {
namespace {

// Every trunk pointer of a model: models with equal keys run on one trunk storage.
std::vector<const void*> trunk_key(const ModelWeights& w) {
  std::vector<const void*> key = {w.tok_emb,   w.pos_emb,       w.lm_head,    w.ln_f.weight,
                                  w.ln_f.bias, w.emb_ln.weight, w.emb_ln.bias};
  for (const BlockWeights& b : w.blocks) {
    key.insert(key.end(), {b.ln1.weight, b.ln1.bias, b.ln2.weight, b.ln2.bias});
    for (const LinearWeights& l : b.linear) key.insert(key.end(), {l.weight_storage(), l.bias});
  }
  return key;
}

}  // namespace

std::vector<std::vector<std::size_t>> group_by_trunk(std::span<const ModelWeights* const> models) {
  std::map<std::vector<const void*>, std::vector<std::size_t>> by_trunk;
  for (std::size_t m = 0; m < models.size(); ++m) by_trunk[trunk_key(*models[m])].push_back(m);
  std::vector<std::vector<std::size_t>> groups;
  for (auto& [key, members] : by_trunk) groups.push_back(std::move(members));
  return groups;
}

}  // namespace scion::runtime
