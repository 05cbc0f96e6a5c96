// Helpers shared by the store commands (lineage, fsck, gc, import, export): opening the
// store named by the global options, formatting sizes and durations, and the JSON form
// of store records.
#pragma once

#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "cli/global_options.h"
#include "lineage/records.h"
#include "lineage/store.h"
#include "spec/workspace.h"

namespace scion::cli {

// The store at global.store_path(), for writing. `create`: make it when missing; without
// it, a clear "no scion store" error instead. Notes each run it finds abandoned.
Result<std::unique_ptr<lineage::LineageStore>> open_store(const GlobalOptions& global, bool create);
// The store for commands that only read it (lineage, fsck, predict, test --no-record):
// opened read-only, so a store this user may not write stays readable.
Result<std::unique_ptr<lineage::LineageStore>> open_store_read_only(const GlobalOptions& global);

// Prints the error and returns its exit code.
int fail(const Status& status);

std::string human_bytes(std::int64_t bytes);  // "1.5 MiB"
std::string human_duration(double seconds);   // "3.2 s", "4m05s", "2h03m"

nlohmann::json run_to_json(const lineage::RunRecord& run);
nlohmann::json stored_model_to_json(const lineage::StoredModel& model);

// The workspace spec named by the global options, checked by load_checked()
// (workbench/checked_workspace.h), or nullopt with the reason in `why` (no spec file, or the
// spec has errors). The lineage queries work without it, but only
// with it can they tell "out of date" and list models not trained yet.
std::optional<spec::Workspace> load_workspace_if_valid(const GlobalOptions& global,
                                                       std::string& why);

// The spec's workspace checked by load_checked() (workbench/checked_workspace.h), after printing
// its warnings; or, after printing every error too, a spec error (exit code 2).
Result<spec::Workspace> load_workspace_or_report(const GlobalOptions& global);

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

// One model of the family as the tree and export views show it: the union of the
// models in the spec and those in the store.
struct FamilyNode {
  std::string name;
  std::string parent;
  std::string method;  // method_label() of its adaptation
  // trained | imported | not trained | out of date | not in spec |
  // interrupted at step N[, resumable]
  std::string status;
  std::optional<lineage::StoredModel> stored;
  ModelHistory history;
};
// Parents before children; siblings by name. `histories`: model_history() of stored models
// (a model without one reads as trained, never imported or interrupted).
std::vector<FamilyNode> family(const std::vector<lineage::StoredModel>& stored,
                               const spec::Workspace* workspace,
                               const std::map<std::string, ModelHistory>& histories = {});

}  // namespace scion::cli
