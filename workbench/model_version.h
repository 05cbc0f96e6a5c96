// Versions of models named on the command line: `MODEL`, `MODEL@N`, `MODEL@<hash prefix>`
// (docs/cli.md, "Model versions"), resolved against the store, and the spec as it was for
// an older version, so that the runtime can load and run it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "lineage/store.h"
#include "spec/workspace.h"

namespace scion::workbench {

// A model named with a version, as every command that reads a stored model takes it:
// `MODEL` (its current version), `MODEL@N` (the version run N of the model made, restored
// or tested; `scion lineage versions MODEL` and `lineage log` list them) or
// `MODEL@<prefix>` (the version whose recipe hash starts with at least 4 hex digits).
// Model names cannot hold '@', so the first '@' ends the name.
struct ModelRef {
  std::string model;
  std::string version;  // as written after '@'; empty: the current version
  std::string text() const { return version.empty() ? model : model + "@" + version; }
};
// Errors: a malformed model name (kInvalidArgument), an empty version after '@'.
Result<ModelRef> parse_model_ref(const std::string& text);

// A stored version a ModelRef names.
struct ResolvedVersion {
  std::string model;
  std::string recipe_hash;
  std::optional<std::int64_t> run;        // the run that made it
  std::optional<std::int64_t> named_run;  // MODEL@N: N
  bool current = false;
};
// Errors (kNotFound unless said): an unknown model (with the closest name), a model with
// no stored version, a run that is not the model's or made no version, a prefix that
// matches no version or several (kInvalidArgument), each listing the model's versions.
Result<ResolvedVersion> resolve_version(lineage::LineageStore& store, const ModelRef& ref);
// parse_model_ref() then resolve_version().
Result<ResolvedVersion> resolve_version(lineage::LineageStore& store, const std::string& text);

// `ws` with `version`'s recipe for its model where it differs from the spec's: the
// adaptation, freeze and training objective the version was made with, and its recipe
// hash, so that StoredFamily loads exactly that version; its ancestors likewise at the
// versions it was made from. Errors: a version made from an unknown parent version, a
// version whose architecture or imported checkpoint differs from the spec's (it cannot
// run in this spec), a model not in the spec.
Result<spec::Workspace> workspace_at(const spec::Workspace& ws, lineage::LineageStore& store,
                                     const ResolvedVersion& version);

// The stored models along `version`'s ancestry, the model first: each at the version of
// its parent it was made from (the parent's current one where the store does not know
// which: a version stored before versions were kept).
Result<std::vector<lineage::StoredModel>> version_ancestry(lineage::LineageStore& store,
                                                           const ResolvedVersion& version);

}  // namespace scion::workbench
