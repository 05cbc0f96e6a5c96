// write_folder_atomically: a folder of exported files (`scion export --format huggingface`
// or `--format peft`) that appears whole or not at all.
//
// The files are written into a staging folder beside the target (".<name>.tmp.<pid>.XXXXXX",
// made with mkdtemp), then the staging folder takes the target's name in one rename: a
// process killed while writing leaves the target as it was (and the hidden staging folder,
// never a model.safetensors without its config.json). An existing target (the caller
// allows it with --force) is swapped with the staging folder in one renameat2
// RENAME_EXCHANGE and then removed; it may hold only names the new folder holds too
// (an earlier export of the same kind), so replacing it never deletes a user's other
// files: any other name refuses the export (kInvalidArgument, exit 2).
#pragma once

#include <filesystem>
#include <functional>

#include "base/status.h"

namespace scion::workbench {

// Calls `write(staging)` to fill the staging folder, then moves it to `dir`. On any error
// the staging folder is removed and `dir` is unchanged.
// REQUIRES: the parent of `dir` exists.
Status write_folder_atomically(const std::filesystem::path& dir,
                               const std::function<Status(const std::filesystem::path&)>& write);

}  // namespace scion::workbench
