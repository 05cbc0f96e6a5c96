#include "workbench/staged_folder.h"

#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <set>
#include <string>
#include <vector>

namespace scion::workbench {
namespace {

namespace fs = std::filesystem;

Status errno_error(const std::string& what, const fs::path& path, int err) {
  return io_error(what + " '" + path.string() + "': " + std::strerror(err));
}

std::set<std::string> names_in(const fs::path& dir) {
  std::set<std::string> names;
  std::error_code ec;
  for (const fs::directory_entry& entry : fs::directory_iterator(dir, ec))
    names.insert(entry.path().filename().string());
  return names;
}

// The names in `existing` that `staged` lacks: files a swap would delete.
std::vector<std::string> names_only_in(const fs::path& existing, const fs::path& staged) {
  const std::set<std::string> ours = names_in(staged);
  std::vector<std::string> others;
  for (const std::string& name : names_in(existing))
    if (!ours.count(name)) others.push_back(name);
  return others;
}

// Replaces the folder `dir` by `staging` in one step; the old folder ends at `staging`.
Status swap_folders(const fs::path& staging, const fs::path& dir) {
  if (::renameat2(AT_FDCWD, staging.c_str(), AT_FDCWD, dir.c_str(), RENAME_EXCHANGE) == 0)
    return Status::ok();
  return errno_error("cannot replace the folder", dir, errno);
}

}  // namespace

Status write_folder_atomically(const fs::path& dir,
                               const std::function<Status(const fs::path&)>& write) {
  const fs::path parent = dir.has_parent_path() ? dir.parent_path() : fs::path(".");
  std::string pattern =
      (parent / fmt::format(".{}.tmp.{}.XXXXXX", dir.filename().string(), ::getpid())).string();
  if (::mkdtemp(pattern.data()) == nullptr)
    return errno_error("cannot create a folder beside", dir, errno);
  const fs::path staging = pattern;
  // mkdtemp makes the folder private (0700); the export gets what mkdir would give it.
  const mode_t mask = ::umask(0);
  ::umask(mask);
  std::error_code ec;
  fs::permissions(staging, static_cast<fs::perms>(0777 & ~mask), ec);
  Status status = write(staging);
  if (status.is_ok()) {
    if (!fs::exists(dir, ec)) {
      if (::rename(staging.c_str(), dir.c_str()) != 0)
        status = errno_error("cannot rename the new folder to", dir, errno);
    } else if (const std::vector<std::string> others = names_only_in(dir, staging);
               !others.empty()) {
      status = invalid_argument(fmt::format(
          "'{}' holds {}{} that this export does not write; --force replaces a folder of an "
          "earlier export only. Choose a new or empty folder",
          dir.string(), others.front(),
          others.size() > 1 ? fmt::format(" and {} other file(s)", others.size() - 1) : ""));
    } else {
      status = swap_folders(staging, dir);
    }
  }
  // The staging folder holds the old folder after a swap, or the unused files after an
  // error; either way it goes (best effort: what was asked is done or already failed).
  fs::remove_all(staging, ec);
  return status;
}

}  // namespace scion::workbench
