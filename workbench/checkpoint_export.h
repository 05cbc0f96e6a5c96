// `scion export MODEL -o FILE [--own-only]`: a stored model's parameters as one
// safetensors checkpoint, atomically, with its lineage in the file's __metadata__
// (safetensors allows only string values, so the chain is a JSON string):
//   format "pt", scion.model, scion.parent, scion.recipe_hash, scion.architecture (JSON),
//   scion.lineage (JSON: [{name, recipe_hash, adaptation}] from the model to its base),
//   scion.own_only, scion.version.
// With own_only, only the parameters the model introduced (its adapters, its head).
// `-o -` streams the same bytes (the header knows every tensor's size before any data is
// written), with no file in between.
#pragma once

#include <cstdint>
#include <filesystem>
#include <ostream>
#include <string>

#include "lineage/store.h"
#include "workbench/model_version.h"

namespace scion::workbench {

struct CheckpointExport {
  std::int64_t tensors = 0;
  std::int64_t bytes = 0;
};

// `version`: the model's current version or an older one (workbench/model_version.h); the
// lineage is that of the versions it was made from. Errors: kNotFound when own_only and
// the model introduced no parameters; the store's and the writer's errors.
Result<CheckpointExport> export_checkpoint(lineage::LineageStore& store,
                                           const ResolvedVersion& version, bool own_only,
                                           const std::filesystem::path& file);

// The same checkpoint written to `out` (standard output for `-o -`). Errors: as
// export_checkpoint's, and kIoError when the stream fails (a full disk, a closed pipe).
Result<CheckpointExport> stream_checkpoint(lineage::LineageStore& store,
                                           const ResolvedVersion& version, bool own_only,
                                           std::ostream& out);

}  // namespace scion::workbench
