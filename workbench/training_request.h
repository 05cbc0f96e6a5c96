// What a training command asks for: `scion train`, `adapt` and `run`'s options as a value.
// workbench::make_plan (workbench/plan.h) plans it; workbench::train executes that plan.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "spec/workspace.h"

namespace scion::workbench {

enum class TrainScope { kBases, kDescendants, kAll };

// How training spreads over the ranks of an mpirun job (docs/distributed.md). Data: every
// rank runs every group, each on its share of the rows. Task: in each wave the groups of
// different trunks run on different ranks at once (workbench/rank_assignment.h). Auto:
// task for a wave whose groups span at least as many trunks as there are ranks, else data.
enum class Parallelism { kAuto, kData, kTask };

struct TrainRequest {
  TrainScope scope = TrainScope::kAll;
  std::vector<std::string> models;     // empty: every model in scope
  bool force = false;                  // retrain models that are up to date
  bool resume = false;                 // continue interrupted jobs from their checkpoints
  std::int64_t memory_budget_mib = 0;  // co-batched groups stay within it; 0: half of RAM
  // Train even a group whose estimated memory exceeds the available memory (MemAvailable)
  // or a memory budget given explicitly; otherwise such a request is refused up front.
  bool ignore_memory_limit = false;
  // Replaces `precision` in every model's training recipe (and so its recipe hash) before
  // anything is planned (`--precision`).
  std::optional<spec::Precision> precision;
  // Sets `recompute` in every model's training recipe (`--recompute`); the recipe hashes
  // stay, as recomputation changes no value.
  bool recompute = false;
  bool quiet = false;  // leave out the notes that only inform (progress is the observer's)
  Parallelism parallel = Parallelism::kAuto;  // only matters under mpirun
  // Where it runs (the device, the backends) is the context's (workbench/context.h).
};

}  // namespace scion::workbench
