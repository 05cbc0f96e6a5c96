// The plan: what `scion train`, `scion adapt` and `scion run` will do, as a value.
//
// make_plan() reads the spec and the lineage store (read only; no store at all means
// nothing is stored yet) and decides, for every model: whether it is up to date (its
// recipe hash stored with every object of its parameters), must run (and why), is
// blocked (an imported base not imported, a parent not stored), or was not asked for.
// A model whose recipe the store already holds a version of (the recipe changed and came
// back) is restored, not trained, when its parent ends the plan at the version it was
// made from; a restore is a pointer move (LineageStore::restore_version). An imported base
// not yet imported (or whose checkpoint changed) is imported first, from the `import:`
// path, its digest checked. The models that run are ordered in waves (a model after its parent) and
// each wave cut into co-batched groups (workbench/training_groups.h), each with its memory estimate
// and estimated FLOPs, checked against the memory available now and an explicit budget. `scion
// plan` prints this value; workbench::train() (workbench/training.h) makes the same plan and
// executes exactly its groups, so there is one planner. Pure apart from reading the store, the data
// files (to count an epoch's steps) and the machine's available memory; thread-compatible.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "lineage/store.h"
#include "base/status.h"
#include "spec/workspace.h"
#include "workbench/checked_workspace.h"
#include "workbench/training_groups.h"
#include "workbench/training_request.h"

namespace scion::workbench {

enum class ModelState {
  kUpToDate,     // stored for its current recipe (an imported base: imported)
  kRestores,     // a stored version of its current recipe becomes current again: no training
  kImports,      // an imported base whose checkpoint is imported first (`import:` in the spec)
  kRuns,         // trains in one of the plan's groups
  kBlocked,      // would run, but cannot: `blocker` says why and what to do
  kNotSelected,  // outside the request's scope or model list
};
// "up to date", "restores", "imports", "runs", "blocked", "not selected"
const char* model_state_name(ModelState state);

// One model: what it is (from the spec) and what the plan does with it.
struct PlannedModel {
  std::string name;
  std::string parent;                // empty for a base
  std::string trunk;                 // the base its lineage starts from
  std::vector<std::string> methods;  // a base: "pretrain" or "import"; else lora, prefix, ...
  std::string objective;             // mlm | clm | classification; empty: not trained
  std::string dataset;               // its training dataset; empty: not trained
  std::string recipe_hash;
  std::optional<spec::Architecture> architecture;  // a base's
  std::string import_path;                         // an imported base's checkpoint
  std::int64_t total_parameters = 0, trainable_parameters = 0;
  // The frozen parameters it inherits: (model that introduced them, count), base first.
  std::vector<std::pair<std::string, std::int64_t>> inherited;
  std::optional<TrainingMemory> memory;  // absent for an imported base (never trained)
  std::int64_t steps = 0;                // optimizer steps of its recipe; 0: not trained
  double flops = 0;                      // estimated FLOPs of training it (training_flops)
  ModelState state = ModelState::kNotSelected;
  // kRestores: the run that made the version restored (nullopt: a version whose run is
  // unknown, from a store older than versions).
  std::optional<std::int64_t> restores_run;
  std::string reason;  // why it runs, is up to date or is blocked, in a few words
  Status blocker;      // kBlocked: the error `scion run` stops with
};

// A co-batched training group, in the order `scion run` trains them.
struct PlannedGroup {
  std::vector<std::string> models;  // spec order within the group
  std::size_t wave = 0;             // 0: needs nothing trained first
  std::string trunk;                // the base of its models
  spec::Precision precision = spec::Precision::kF32;
  std::int64_t memory_bytes = 0;    // group_memory_bytes()
  double flops = 0;                 // the sum over its models
  std::vector<std::string> shares;  // `share` declarations with a model in the group
  bool over_available = false;      // its estimate exceeds the memory available now
  bool over_budget = false;         // ... or an explicit --memory-budget
};

// Descendants with the same frozen inherited parameters (same names, same origin): they
// can run one forward pass through that frozen trunk for all their rows.
struct CobatchSet {
  std::vector<std::string> models;
  std::int64_t frozen_parameters = 0;
};

// fp32 weights of the whole family in memory: each model holding its own copy of every
// parameter it uses, and with sharing (each tensor once, as ParameterStore holds them).
struct FamilyWeights {
  std::int64_t unshared_bytes = 0, shared_bytes = 0;
};

struct Plan {
  std::string spec_path;
  std::string store_path;
  bool store_exists = false;  // false: nothing is stored yet, so everything runs
  std::vector<PlannedModel> models;  // spec order (parents first)
  std::vector<PlannedGroup> groups;
  std::vector<CobatchSet> cobatch;  // spec-only: every trained descendant, stored or not
  FamilyWeights weights;
  std::int64_t budget_bytes = 0;           // the grouping budget; 0: no limit
  std::int64_t explicit_budget_bytes = 0;  // --memory-budget; 0: none given
  std::optional<std::int64_t> available_bytes;  // MemAvailable; absent: unknown
  // Notes training prints before it starts (a partner of a share unit that trains too,
  // a model whose stored objects are missing).
  std::vector<std::string> notes;

  const PlannedModel* find(const std::string& name) const;
  // The first blocked model's error, in spec order; ok when none is blocked.
  Status blocked() const;
  // kOutOfMemory naming the first group over the available memory or the explicit budget
  // (what to lower, or --ignore-memory-limit); ok when every group fits.
  Status memory_refusal() const;
};

// The plan for `request` against `store` (null: no store exists yet). Errors: a model
// named in the request that is unknown or out of its scope (kInvalidArgument/kNotFound),
// a store that cannot be read. `ws` must be valid (load_checked) and already carry any
// override of the request (with_overrides()).
Result<Plan> make_plan(const spec::Workspace& ws, lineage::LineageStore* store,
                       const TrainRequest& request);
// The same from load_checked()'s result: a spec error when it has errors.
Result<Plan> make_plan(const CheckedWorkspace& checked, lineage::LineageStore* store,
                       const TrainRequest& request);

// Whether `request` overrides the training recipes (`--precision`, `--recompute`).
bool overrides_recipes(const TrainRequest& request);
// `ws` with every training recipe in the request's precision and recompute setting, and
// the recipe hashes recomputed (precision is hashed; recompute changes no value and is not).
spec::Workspace with_overrides(const spec::Workspace& ws, const TrainRequest& request);

}  // namespace scion::workbench
