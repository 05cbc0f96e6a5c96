// TrainingSession: what `scion train`, `scion adapt` and `scion run` share.
//
// It decides what is out of date (a model whose recipe hash has no stored parameters),
// orders the work in waves (a model runs once its parent's parameters are in the store),
// groups each wave into co-batched groups (descendants of one base whose trunk stays
// frozen train together, split to fit a memory budget; a model that trains its trunk
// trains alone; see training_groups.h), runs each group
// through runtime::FamilyTrainer, and records every run, its metrics and the finished
// parameters in the lineage store (parameters and run status in one transaction).
// Ctrl-C stops between steps: finished models are kept, unfinished runs are marked
// interrupted, and the store stays consistent. Each unfinished job leaves a checkpoint
// (every kCheckpointEvery steps, and at the interruption) under <store>/checkpoints/, from
// which `--resume` continues it exactly. Before any work, a request whose groups would
// need more memory than the machine has available (or than an explicit --memory-budget)
// is refused with kOutOfMemory, nothing written. A job whose loss or parameters stop
// being finite is recorded `diverged` and stores nothing; the others go on (kDiverged).
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "cli/global_options.h"
#include "spec/status.h"
#include "spec/workspace.h"

namespace scion::cli {

enum class TrainScope { kBases, kDescendants, kAll };

struct TrainRequest {
  TrainScope scope = TrainScope::kAll;
  std::vector<std::string> models;  // empty: every model in scope
  bool force = false;               // retrain models that are up to date
  bool resume = false;              // continue interrupted jobs from their checkpoints
  std::int64_t memory_budget_mib = 0;  // co-batched groups stay within it; 0: half of RAM
  // Train even a group whose estimated memory exceeds the available memory (MemAvailable)
  // or a --memory-budget given explicitly; otherwise such a request is refused up front.
  bool ignore_memory_limit = false;
  // --precision: replaces `precision` in every model's training recipe (and so its recipe
  // hash) before anything is planned.
  std::optional<spec::Precision> precision;
};

// Runs the request; prints progress on stderr and a summary on stdout (JSON with --json).
// Returns the process exit code.
int run_training(const GlobalOptions& global, const TrainRequest& request);

}  // namespace scion::cli
