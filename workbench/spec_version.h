// Spec versions and tags: what `scion gc --keep N` keeps (docs/store.md, "fsck and gc").
//
// A spec version is the set of (model, recipe hash) a spec names. The commands that store
// models (run, train, adapt, import) record the one they ran as seen now; `scion tag NAME`
// names the current one, whose versions gc then keeps for good.
#pragma once

#include <map>
#include <string>

#include "lineage/store.h"
#include "spec/workspace.h"

namespace scion::workbench {

// model -> recipe hash for every model of `ws`.
std::map<std::string, std::string> spec_members(const spec::Workspace& ws);

// Records `ws`'s spec version in `store` as seen now.
Status record_spec_version(const spec::Workspace& ws, lineage::LineageStore& store);

// Tags `ws`'s spec version `tag`. Errors: an invalid tag name (kInvalidArgument), a model
// not stored at its current recipe (kInvalidArgument: `scion run` first), store errors.
Status tag_spec_version(const spec::Workspace& ws, lineage::LineageStore& store,
                        const std::string& tag);

}  // namespace scion::workbench
