#include "cli/output_path.h"

#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <system_error>

namespace scion::cli {
namespace {

namespace fs = std::filesystem;

// Whether `path` is `dir` or lies below it; both canonical.
bool is_inside(const fs::path& path, const fs::path& dir) {
  auto [dir_end, path_end] = std::mismatch(dir.begin(), dir.end(), path.begin(), path.end());
  return dir_end == dir.end();
}

std::string kind_of_file(fs::file_type type) {
  switch (type) {
    case fs::file_type::directory:
      return "a folder";
    case fs::file_type::character:
      return "a character device";
    case fs::file_type::block:
      return "a block device";
    case fs::file_type::fifo:
      return "a fifo";
    case fs::file_type::socket:
      return "a socket";
    case fs::file_type::symlink:
      return "a symbolic link to nothing";
    default:
      return "something other than a regular file";
  }
}

// The folder the target goes into must exist: write_file_atomically would otherwise
// report its temporary file's name.
Status check_folder(const fs::path& target, std::string_view option) {
  const fs::path folder = target.has_parent_path() ? target.parent_path() : fs::path(".");
  std::error_code ec;
  const fs::file_status status = fs::status(folder, ec);
  if (status.type() == fs::file_type::not_found)
    return invalid_argument(
        fmt::format("{} {}: folder '{}' does not exist; create it first "
                    "(mkdir -p {}) or choose another folder",
                    option, target.string(), folder.string(), folder.string()));
  if (ec)
    return invalid_argument(fmt::format("{} {}: cannot read folder '{}': {}", option,
                                        target.string(), folder.string(), ec.message()));
  if (status.type() != fs::file_type::directory)
    return invalid_argument(fmt::format("{} {}: '{}' is not a folder; choose a file in a folder",
                                        option, target.string(), folder.string()));
  return Status::ok();
}

// The store `path` (canonical) is or lies in, or nullopt: the configured store, or any
// folder on its way up that holds a lineage.db (another workspace's store, one given with
// --store elsewhere).
std::optional<fs::path> store_holding(const fs::path& path, const fs::path& store_dir) {
  std::error_code ec;
  const fs::path store = fs::weakly_canonical(fs::absolute(store_dir), ec);
  if (!ec && is_inside(path, store)) return store_dir;
  for (fs::path p = path; !p.empty(); p = p.parent_path()) {
    if (fs::is_regular_file(p / "lineage.db", ec)) return p;
    if (p == p.root_path()) break;
  }
  return std::nullopt;
}

// The target resolved (symbolic links and ".." followed), refused inside a store.
Result<fs::path> resolved_outside_store(const fs::path& target, const fs::path& store_dir,
                                        std::string_view option) {
  std::error_code ec;
  const fs::path resolved = fs::weakly_canonical(fs::absolute(target), ec);
  if (ec)
    return invalid_argument(
        fmt::format("{} {}: cannot resolve the path: {}", option, target.string(), ec.message()));
  if (const std::optional<fs::path> store = store_holding(resolved, store_dir))
    return invalid_argument(fmt::format(
        "{} {}: it would be inside the scion store '{}', whose files only scion may write; "
        "choose a path outside it",
        option, target.string(), store->string()));
  return resolved;
}

}  // namespace

Result<fs::path> checked_output_folder(const fs::path& target, const fs::path& store_dir,
                                       std::string_view option) {
  if (target.empty()) return invalid_argument(fmt::format("{} needs a folder", option));
  auto resolved = resolved_outside_store(target, store_dir, option);
  if (!resolved) return resolved.status();
  std::error_code ec;
  const fs::file_status existing = fs::status(*resolved, ec);
  if (existing.type() != fs::file_type::not_found && existing.type() != fs::file_type::directory)
    return invalid_argument(
        fmt::format("{} {}: is {}, not a folder; choose a folder (new or "
                    "existing)",
                    option, target.string(),
                    existing.type() == fs::file_type::regular ? std::string("a file")
                                                              : kind_of_file(existing.type())));
  return resolved;
}

Result<fs::path> checked_output_path(const fs::path& target, const fs::path& store_dir, bool force,
                                     std::string_view option) {
  if (target.empty()) return invalid_argument(fmt::format("{} needs a file name", option));
  const fs::path name = target.filename();
  if (name.empty() || name == "." || name == "..")
    return invalid_argument(
        fmt::format("{} {}: names a folder; give a file name inside it", option, target.string()));
  SCION_RETURN_IF_ERROR(check_folder(target, option));
  auto outside = resolved_outside_store(target, store_dir, option);
  if (!outside) return outside.status();
  const fs::path& resolved = *outside;
  std::error_code ec;
  const fs::file_status existing = fs::symlink_status(resolved, ec);
  if (existing.type() == fs::file_type::not_found) return resolved;
  if (existing.type() != fs::file_type::regular)
    return invalid_argument(
        fmt::format("{} {}: is {}, not a file scion may replace; choose "
                    "another path",
                    option, target.string(), kind_of_file(existing.type())));
  if (!force)
    return invalid_argument(
        fmt::format("{} {}: the file exists; pass --force to replace it, "
                    "or choose another path",
                    option, target.string()));
  return resolved;
}

}  // namespace scion::cli
