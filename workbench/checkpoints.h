// The checkpoints of unfinished training jobs under <store>/checkpoints/, and which of
// them can no longer be resumed: `scion gc` removes those, `scion fsck` notes them.
//
// A checkpoint names its model and recipe hash in its safetensors __metadata__
// (workbench/checkpoint_file.h); that, not the file name, says what it belongs to. One is
// stale when its model's parameters for
// that recipe were stored after it was written (the job finished; a checkpoint newer than
// the stored version is a later `run --force` of the same recipe, which `--resume`
// continues), or, with a spec, when the model left the spec or its recipe changed since. Without a spec only the first can be told.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "lineage/store.h"
#include "spec/workspace.h"

namespace scion::workbench {

struct CheckpointFile {
  std::filesystem::path path;
  std::string model;        // from the metadata; empty when the file is unreadable
  std::string recipe_hash;  // likewise
  std::string stale;        // why it cannot be resumed any more; empty: it can
};

// Every checkpoint file (and temporary file of an interrupted checkpoint write older than
// `temp_age_seconds`, which is stale) under the store's checkpoints/ folder.
// `workspace` may be null.
Result<std::vector<CheckpointFile>> list_checkpoints(lineage::LineageStore& store,
                                                     const spec::Workspace* workspace,
                                                     std::int64_t temp_age_seconds = 3600);

// The stale ones of list_checkpoints, removed from the store's folder unless `dry_run`.
Result<std::vector<CheckpointFile>> remove_stale_checkpoints(lineage::LineageStore& store,
                                                             const spec::Workspace* workspace,
                                                             bool dry_run);

}  // namespace scion::workbench
