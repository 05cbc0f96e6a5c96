// What `scion export` writes out: the spec's model at the version named, with its stored
// parameters. MODEL is the spec's recipe, which must be the one stored (the freshness
// rule: a model whose stored parameters are of another recipe is out of date and is not
// exported as if it were current); MODEL@N and MODEL@<hash prefix> name a stored version,
// read in the spec as it was for that version (workbench/model_version.h).
#pragma once

#include <string>

#include "base/status.h"
#include "lineage/store.h"
#include "spec/workspace.h"

namespace scion::workbench {

struct ExportSource {
  spec::Workspace workspace;           // the spec, or the spec as it was for the version named
  const spec::Model* model = nullptr;  // in `workspace`
  lineage::LoadedParameters params;    // borrow the store's mapped bytes
};

// Errors: a malformed reference or a model not in the spec (kInvalidArgument, kNotFound),
// a model never stored (kNotFound), a stored model out of date (kInvalidArgument, saying
// to run it or to name a stored version), the store's.
Result<ExportSource> export_source(spec::Workspace workspace, lineage::LineageStore& store,
                                   const std::string& named);

}  // namespace scion::workbench
