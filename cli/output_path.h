// The one rule for every file or folder the CLI writes at a path the user gives (export -o
// in every format, report -o, test --junit and --export-violations, export-runs DIR,
// init DIR).
//
// A target is refused (invalid_argument, exit 2) when
//   - it lies inside a store, after resolving symbolic links and "..": the configured
//     store directory, or any folder on its way up holding a lineage.db. The store's files
//     belong to the store (writing over lineage.db loses every model, a stray folder in
//     objects/ is damage);
//   - it exists and is not a regular file (a device such as /dev/full, a folder, a fifo,
//     a dangling symbolic link): a file renamed over it would replace it;
//   - it exists and `force` is false: the user replaces files on purpose, with --force;
//   - its folder does not exist: the message names the folder, not a temporary file.
// A folder target follows the first rule, and must be a folder when it exists; what may
// be in it is the command's to decide.
// Checking is separate from writing: commands check before any work starts, so a long
// run does not end in an error it could have reported at once.
#pragma once

#include <filesystem>
#include <string_view>

#include "base/status.h"

namespace scion::cli {

// The target with symbolic links and ".." resolved, ready to write, or why it may not be
// written. `option` names the option in messages ("-o", "--junit").
Result<std::filesystem::path> checked_output_path(const std::filesystem::path& target,
                                                  const std::filesystem::path& store_dir,
                                                  bool force, std::string_view option);

// A folder the command writes into (made when missing), resolved, or why it may not be.
Result<std::filesystem::path> checked_output_folder(const std::filesystem::path& target,
                                                    const std::filesystem::path& store_dir,
                                                    std::string_view option);

}  // namespace scion::cli
