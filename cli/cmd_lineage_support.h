// Helpers shared by the store commands (lineage, fsck, gc, import, export): formatting
// sizes and durations, and the JSON form of store records (they open the store through
// cli/command_context.h's open_store_context). The lineage queries themselves are
// workbench/lineage_views.h.
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

}  // namespace scion::cli
