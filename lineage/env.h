// Env: the file-system operations the lineage store performs, behind one interface.
//
// Every write of an object file goes through an Env, so tests can substitute one that
// fails (disk full on the n-th write, a crash between write and rename) and check that
// the store stays consistent. default_env() is the POSIX implementation; it is stateless
// and thread-safe. An Env outlives every store that uses it; callers own custom Envs.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "base/status.h"

namespace scion::lineage {

// A new file being written, which gets its name only when it is complete (publish). Not
// thread-safe; use and destroy it from one thread. Destroyed unpublished, it leaves nothing
// under any name (a named temporary file is removed; an unnamed one never had a name).
class WritableFile {
 public:
  virtual ~WritableFile() = default;
  virtual Status append(std::span<const std::byte> data) = 0;
  virtual Status sync() = 0;  // fsync: the bytes are durable when this returns ok
  // Gives the file the name `path`, atomically replacing any file there (rename(2)), and
  // closes it. REQUIRES: `path` is the target the file was created for.
  virtual Status publish(const std::filesystem::path& path) = 0;
};

// A read-only view of a whole file, memory-mapped where the platform allows.
// The bytes stay valid while the region lives.
class MappedRegion {
 public:
  virtual ~MappedRegion() = default;
  virtual std::span<const std::byte> bytes() const = 0;
};

class Env {
 public:
  virtual ~Env() = default;

  // A new file in the folder of `target`, to be published as `target`. It has no name
  // until then where the file system allows (O_TMPFILE: a process killed while writing
  // leaves nothing behind); elsewhere it is `<target>.tmp.<pid>.<n>`, created with O_EXCL
  // and O_NOFOLLOW, so a file or symbolic link planted under that name is never written
  // through (the next name is tried).
  virtual Result<std::unique_ptr<WritableFile>> new_temporary_file(
      const std::filesystem::path& target) = 0;
  // fsyncs a directory so that renames and creations inside it are durable.
  virtual Status sync_dir(const std::filesystem::path& dir) = 0;
  virtual Status remove_file(const std::filesystem::path& path) = 0;
  virtual Status create_dirs(const std::filesystem::path& dir) = 0;
  virtual bool file_exists(const std::filesystem::path& path) = 0;
  // Seconds since `path` was last written (its mtime), by the wall clock.
  virtual Result<std::int64_t> seconds_since_modified(const std::filesystem::path& path) = 0;
  virtual Result<std::unique_ptr<MappedRegion>> map_file(const std::filesystem::path& path) = 0;
  // Regular files under `dir`, recursively; empty when `dir` does not exist.
  virtual Result<std::vector<std::filesystem::path>> list_files(
      const std::filesystem::path& dir) = 0;
};

// "; the file size limit (ulimit -f) is N bytes: raise it" when the process has one,
// else "": appended to write errors, since hitting it looks like a full disk (EFBIG).
std::string file_size_limit_note();

// The process-wide POSIX Env.
Env& default_env();

// Writes `data` to `path` so that no reader ever sees a partial file under that name:
// a temporary file beside it (Env::new_temporary_file) is written, fsynced, published
// over `path`, and the directory fsynced. On error nothing is left and `path` is untouched.
// `pieces` are written one after another, so large files need not be joined in memory.
Status write_file_atomically(Env& env, const std::filesystem::path& path,
                             std::span<const std::span<const std::byte>> pieces);

}  // namespace scion::lineage
