// The one guard for files scion reads or writes at paths that others can reach: data,
// specs, model folders, caches, and the folders commands export into.
//
// Reading: only regular files are read. A fifo, device or socket planted at a data, spec
// or cache path would block open(2) or read(2) forever (with SIGINT and SIGTERM unable to
// end it, since their handlers only set a flag and the call restarts). So files are
// opened O_NONBLOCK (a fifo's open returns at once), checked with fstat, and read only
// when regular; anything else is refused with what it is.
//
// Writing: a file is written to a fresh temporary name beside the target (O_CREAT|O_EXCL|
// O_NOFOLLOW: a link planted under that name is never written through), fsynced and
// renamed over the target. rename(2) replaces a symbolic link at the target instead of
// following it. Folders below an export root are made one by one and refused when one is
// a symbolic link, so a planted link never carries writes outside the root.
// lineage::write_file_atomically (lineage/env.h) keeps the same rules for the store and for
// every writer that may include it (exports, init, test's violations file), and lets tests
// inject faults; write_file_replacing is for the layers below it (the JUnit report in
// assertions/, the matmul cache in runtime/).
//
// Stateless and thread-safe.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

#include "base/status.h"

namespace scion {

enum class FollowLinks { kYes, kNo };

// "a fifo", "a folder", "a symbolic link", ...: what a non-regular file is, for messages.
std::string kind_of_file(const std::filesystem::path& path, FollowLinks follow);

// Ok when `path` is a regular file (or, with kYes, a link to one). Errors:
// invalid_argument "'<path>' is a fifo, not a regular file; ..." for anything else,
// not_found when it is missing, io_error when it cannot be checked. Never blocks.
Status check_regular_file(const std::filesystem::path& path, FollowLinks follow);

// The whole contents of `path`, which must be a regular file (check_regular_file's
// errors); the check and the read use one descriptor, so nothing swapped in between is
// read.
Result<std::string> read_regular_file(const std::filesystem::path& path, FollowLinks follow);

// Makes `root / relative` and every folder between, none of which below `root` may be a
// symbolic link or anything but a folder (invalid_argument naming it and what to do).
// `root` itself is made when missing.
Status make_folders_below(const std::filesystem::path& root, const std::filesystem::path& relative);

// Writes `bytes` to `path` atomically and without following links (see above); on error
// nothing is left and `path` is untouched.
Status write_file_replacing(const std::filesystem::path& path, std::string_view bytes);

}  // namespace scion
