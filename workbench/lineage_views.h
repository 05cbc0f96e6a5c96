// The lineage queries (`scion lineage tree|show|diff|export`, and `scion report`'s tree) as
// plain values read from the store and, where there is one, the spec. cli/cmd_lineage*.cpp
// only prints them. Reads only; every function may be called on a read-only store.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "lineage/records.h"
#include "lineage/store.h"
#include "spec/workspace.h"

namespace scion::workbench {

// What a stored model's runs say that its parameters do not: how the stored parameters
// were made, and a training run of the recipe in question that was interrupted.
struct ModelHistory {
  bool imported = false;                       // by `scion import`, not trained
  std::optional<std::int64_t> interrupted_at;  // the step its newest training run stopped at
  bool resumable = false;                      // that run left a checkpoint for --resume
};

// The history of `model`, whose recipe in question is `recipe_hash` (the spec's; empty
// without a spec: whatever its newest training run was).
Result<ModelHistory> model_history(lineage::LineageStore& store, const lineage::StoredModel& model,
                                   const std::string& recipe_hash);

// Where a model of the family stands, by its stored parameters against the spec.
enum class Standing {
  kTrained,     // stored for the spec's recipe (or, without a spec, stored), trained
  kImported,    // likewise, imported by `scion import`
  kNotTrained,  // nothing stored
  kOutOfDate,   // stored for another recipe than the spec's
  kNotInSpec,   // stored, but the spec has no such model
};
// "trained", "imported", "not trained", "out of date", "not in spec".
std::string_view standing_name(Standing standing);

// One model of the family as the tree, export and report views show it: the union of the
// models in the spec and those in the store.
struct FamilyNode {
  std::string name;
  std::string parent;
  std::string method;  // method_label() of its adaptation
  Standing standing = Standing::kNotTrained;
  // Its words, made by family(): standing_name(standing), or, for a model not trained or
  // out of date whose training run of the recipe was interrupted, "interrupted at step
  // N[, resumable]".
  std::string status;
  std::optional<lineage::StoredModel> stored;
  ModelHistory history;
};
// Parents before children; siblings by name. `histories`: model_history() of stored models
// (a model without one reads as trained, never imported or interrupted).
std::vector<FamilyNode> family(const std::vector<lineage::StoredModel>& stored,
                               const spec::Workspace* workspace,
                               const std::map<std::string, ModelHistory>& histories = {});

// The family of `store` (null: no store yet) and `workspace` (null: no valid spec), each
// stored model with its history.
Result<std::vector<FamilyNode>> family_of(lineage::LineageStore* store,
                                          const spec::Workspace* workspace);

// The nodes of the subtree rooted at `root` (every node when root is empty); an unknown
// or malformed root is an error naming the closest known model.
Result<std::vector<FamilyNode>> subtree(const std::vector<FamilyNode>& nodes,
                                        const std::string& root);

// The run that made a model's stored parameters: the newest finished train, adapt or
// import run of its stored recipe (test and restore runs finish too, but make nothing).
// `runs`: the model's runs, newest first.
std::optional<lineage::RunRecord> recipe_run(const std::vector<lineage::RunRecord>& runs,
                                             const lineage::StoredModel& model);

// What that run recorded, in the spec's words: a trained model's `train` section, an
// imported one's source; an empty object without a run.
nlohmann::json training_recipe(const std::optional<lineage::RunRecord>& run);

// The validation metrics of the parameters a training run stored: the step keep_best kept
// (its hyperparameters' `kept.step`), else the last validation's; empty without one.
std::map<std::string, double> stored_validation(const lineage::RunRecord& run,
                                                const std::vector<lineage::StepMetrics>& steps);

// The validation metrics of the node's stored parameters (stored_validation of the run
// that made them; empty when it recorded none, e.g. no validation split).
Result<std::map<std::string, double>> last_validation(lineage::LineageStore& store,
                                                      const FamilyNode& node);

// `scion lineage metrics`: run `wanted` of `model`, or (wanted 0) the run that made its
// stored parameters, else its newest training run (e.g. one that was interrupted).
// Errors name the model's training runs: an unknown run (kNotFound), a run that records
// no per-step metrics (kInvalidArgument), no training run at all (kNotFound).
Result<lineage::RunRecord> metrics_run(lineage::LineageStore& store,
                                       const lineage::StoredModel& model, std::int64_t wanted);

// `scion lineage show MODEL` (or MODEL@N, MODEL@<prefix>: that version's ancestry, recipe,
// evaluations and the runs of its recipe).
struct AncestryStep {
  lineage::StoredModel model;
  std::vector<lineage::DatasetRecord> datasets;
  std::optional<std::int64_t> recipe_run;  // the run that made its parameters
  nlohmann::json training;                 // training_recipe() of that run
};
struct RunWithValidation {
  lineage::RunRecord run;
  std::map<std::string, double> final_validation;  // its last validation step's metrics
};
struct ModelShow {
  std::string model;
  std::string version;                 // as named (MODEL@N, MODEL@<prefix>); empty: the current one
  bool current = true;                 // the model's current version
  std::vector<AncestryStep> ancestry;  // the model first, up to its base
  std::vector<RunWithValidation> runs, test_runs;  // newest first
  std::map<std::string, std::int64_t> shares;      // other model -> identical tensors
  std::vector<lineage::EvalResult> evaluations;    // `scion eval` results, newest first
  std::optional<std::string> recipe_hash;          // the stored parameters' version
};
// Errors: no stored model of that name (kNotFound, with the closest name), store errors.
Result<ModelShow> show_model(lineage::LineageStore& store, const std::string& model);

// `scion lineage diff A B`: parameters by digest, and recipe fields ("training.lr").
struct RecipeDifference {
  std::string field;
  nlohmann::json a, b;  // null where the model has no such field
};
struct ModelDiff {
  std::vector<std::string> shared, differ, only_in_a, only_in_b;  // parameter names
  std::vector<RecipeDifference> recipe;                           // by field name
};
// Either side may be an older version (`A@N`, `A@<prefix>`; workbench/model_version.h).
Result<ModelDiff> diff_models(lineage::LineageStore& store, const std::string& a,
                              const std::string& b);

// `scion lineage log`: for each run that made a version (train, adapt, import), the recipe
// fields (in the spec's words: "train.optimizer.lr", "adapt.lora.alpha") that differ from
// the version of the same model the newest finished such run before it made; outcomes
// recorded with the recipe (keep_best's `kept`) are not changes. A model's first version
// changes nothing. `runs`: newest first, of any models.
std::map<std::int64_t, std::vector<RecipeDifference>> recipe_changes(
    const std::vector<lineage::RunRecord>& runs);

}  // namespace scion::workbench
