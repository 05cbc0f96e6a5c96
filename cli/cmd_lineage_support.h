// Helpers shared by the store commands (lineage, fsck, gc, import, export): opening the
// store named by the global options, formatting sizes and durations, and the JSON form
// of store records.
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "cli/global_options.h"
#include "lineage/records.h"
#include "lineage/store.h"
#include "spec/workspace.h"

namespace scion::cli {

// The store at global.store_path(). `create`: make it when missing (writers); readers
// get a clear "no scion store" error instead.
Result<std::unique_ptr<lineage::LineageStore>> open_store(const GlobalOptions& global, bool create);

// Prints the error and returns its exit code.
int fail(const Status& status);

std::string human_bytes(std::int64_t bytes);  // "1.5 MiB"
std::string human_duration(double seconds);   // "3.2 s", "4m05s", "2h03m"

nlohmann::json run_to_json(const lineage::RunRecord& run);
nlohmann::json stored_model_to_json(const lineage::StoredModel& model);

// The workspace spec named by the global options, checked by load_checked()
// (cli/checked_workspace.h), or nullopt with the reason in `why` (no spec file, or the
// spec has errors). The lineage queries work without it, but only
// with it can they tell "out of date" and list models not trained yet.
std::optional<spec::Workspace> load_workspace_if_valid(const GlobalOptions& global,
                                                       std::string& why);

// The spec's workspace checked by load_checked() (cli/checked_workspace.h), after printing
// its warnings; or, after printing every error too, a spec error (exit code 2).
Result<spec::Workspace> load_workspace_or_report(const GlobalOptions& global);

// One model of the family as the tree and export views show it: the union of the
// models in the spec and those in the store.
struct FamilyNode {
  std::string name;
  std::string parent;
  std::string method;  // method_label() of its adaptation
  std::string status;  // trained | not trained | out of date | not in spec
  std::optional<lineage::StoredModel> stored;
};
// Parents before children; siblings by name.
std::vector<FamilyNode> family(const std::vector<lineage::StoredModel>& stored,
                               const spec::Workspace* workspace);

}  // namespace scion::cli
