// Which models of a family may run in one FamilyBatch: those bound to the same trunk
// storage (every trunk pointer equal), such as the descendants of one base loaded into
// one runtime::ParameterStore that keep its trunk frozen. A model that retrains part of
// the trunk (BitFit, full fine-tuning) has trunk values of its own and forms a group of
// its own, as do the models of another base. Pure functions over borrowed weights.
#pragma once

#include <cstddef>
#include <span>
#include <vector>

#include "runtime/model/model_weights.h"

namespace scion::runtime {

// Indices into `models`, one list per trunk storage; each list keeps the models' order.
// REQUIRES: no null pointer.
std::vector<std::vector<std::size_t>> group_by_trunk(std::span<const ModelWeights* const> models);

}  // namespace scion::runtime
