// Looking up a model named on the command line, in the spec or in the store, with one
// message for every command: a name that breaks the naming rule (spec/names.h) is a
// usage error before any lookup, and an unknown name gets the closest known one as a
// suggestion ("no model 'news-lroa' in the store — did you mean 'news-lora'?").
#pragma once

#include <span>
#include <string>

#include "lineage/store.h"
#include "spec/workspace.h"

namespace scion::workbench {

// invalid_argument when `name` breaks the naming rule, else ok.
Status check_model_name(const std::string& name);

// not_found: "no model 'x' in <where> — did you mean 'y'?", or "no model 'x' in
// <where><remedy>" when no known name is close. `known`: the names that exist there.
Status unknown_model(const std::string& name, const std::string& where,
                     std::span<const std::string> known, const std::string& remedy = "");

// The spec's model called `name`; unknown_model naming the spec file when there is none.
Result<const spec::Model*> find_spec_model(const spec::Workspace& ws, const std::string& name,
                                           const std::string& remedy = "");

// The stored model called `name`; unknown_model naming the store when there is none.
Result<lineage::StoredModel> find_stored_model(lineage::LineageStore& store,
                                               const std::string& name);

}  // namespace scion::workbench
