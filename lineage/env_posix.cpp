// The POSIX Env: open/write/fsync/rename and mmap.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <random>
#include <system_error>

#include "base/regular_file.h"
#include "lineage/env.h"

namespace scion::lineage {
namespace {

namespace fs = std::filesystem;

Status errno_status(const std::string& what, const fs::path& path, int err) {
  std::string hint;
  if (err == ENOSPC) hint = "; free disk space and retry";
  if (err == EFBIG) hint = file_size_limit_note();
  if (err == EACCES || err == EPERM) hint = "; check the permissions of the store directory";
  return io_error(what + " '" + path.string() + "': " + std::strerror(err) + hint);
}

// "<target>.tmp.<pid>.<n>": n from a process-wide counter started at a random value, so
// names are hard to guess ahead (every creation is O_EXCL anyway).
fs::path temporary_name(const fs::path& target) {
  static std::atomic<std::uint32_t> counter{std::random_device{}()};
  return target.string() + ".tmp." + std::to_string(::getpid()) + "." +
         std::to_string(counter.fetch_add(1));
}

// A temporary file: unnamed (O_TMPFILE) when `named_` is empty, else under that name.
class PosixWritableFile final : public WritableFile {
 public:
  PosixWritableFile(fs::path target, fs::path named, int fd)
      : target_(std::move(target)), named_(std::move(named)), fd_(fd) {}
  ~PosixWritableFile() override {
    if (fd_ >= 0) ::close(fd_);
    // Never published: the name it had goes too (best effort; the write already failed).
    if (!named_.empty()) ::unlink(named_.c_str());
  }

  Status append(std::span<const std::byte> data) override {
    const std::byte* p = data.data();
    std::size_t left = data.size();
    while (left > 0) {
      ssize_t n = ::write(fd_, p, left);
      if (n < 0) {
        if (errno == EINTR) continue;
        return errno_status("cannot write", target_, errno);
      }
      p += n;
      left -= static_cast<std::size_t>(n);
    }
    return Status::ok();
  }

  Status sync() override {
    if (::fsync(fd_) != 0) return errno_status("cannot fsync", target_, errno);
    return Status::ok();
  }

  Status publish(const fs::path& path) override {
    if (named_.empty()) {
      // An unnamed file is linked under a fresh name, then renamed over `path` (linkat
      // cannot replace a file): only between these two calls is a name left by a kill.
      auto linked = link_unnamed();
      if (!linked.is_ok()) return linked.status();
      named_ = *linked;
    }
    const int fd = fd_;
    fd_ = -1;
    if (::close(fd) != 0) return errno_status("cannot close", target_, errno);
    if (::rename(named_.c_str(), path.c_str()) != 0)
      return errno_status("cannot rename", named_, errno);
    named_.clear();
    return Status::ok();
  }

 private:
  Result<fs::path> link_unnamed() {
    const std::string proc = "/proc/self/fd/" + std::to_string(fd_);
    for (int attempt = 0; attempt < 100; ++attempt) {
      const fs::path name = temporary_name(target_);
      if (::linkat(AT_FDCWD, proc.c_str(), AT_FDCWD, name.c_str(), AT_SYMLINK_FOLLOW) == 0)
        return name;
      if (errno != EEXIST) return errno_status("cannot name", target_, errno);
    }
    return io_error("cannot name the new '" + target_.string() +
                    "': 100 temporary names beside it are taken");
  }

  fs::path target_;
  fs::path named_;
  int fd_;
};

class PosixMappedRegion final : public MappedRegion {
 public:
  PosixMappedRegion(void* base, std::size_t size) : base_(base), size_(size) {}
  ~PosixMappedRegion() override {
    if (size_ > 0) ::munmap(base_, size_);
  }
  std::span<const std::byte> bytes() const override {
    return {static_cast<const std::byte*>(base_), size_};
  }

 private:
  void* base_;
  std::size_t size_;
};

class PosixEnv final : public Env {
 public:
  Result<std::unique_ptr<WritableFile>> new_temporary_file(const fs::path& target) override {
    const fs::path folder = target.has_parent_path() ? target.parent_path() : fs::path(".");
    int fd = ::open(folder.c_str(), O_TMPFILE | O_WRONLY | O_CLOEXEC, 0644);
    if (fd >= 0)
      return std::unique_ptr<WritableFile>(std::make_unique<PosixWritableFile>(target, "", fd));
    // File systems without O_TMPFILE say so in several ways; anything else is a real error.
    if (errno != EOPNOTSUPP && errno != EISDIR && errno != EINVAL && errno != ENOTSUP)
      return errno_status("cannot create a file in", folder, errno);
    for (int attempt = 0; attempt < 100; ++attempt) {
      const fs::path name = temporary_name(target);
      fd = ::open(name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
      if (fd >= 0)
        return std::unique_ptr<WritableFile>(std::make_unique<PosixWritableFile>(target, name, fd));
      if (errno != EEXIST) return errno_status("cannot create", name, errno);
    }
    return io_error("cannot create a temporary file beside '" + target.string() +
                    "': 100 names are taken");
  }

  Status sync_dir(const fs::path& dir) override {
    int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return errno_status("cannot open directory", dir, errno);
    int rc = ::fsync(fd);
    int err = errno;
    ::close(fd);
    if (rc != 0) return errno_status("cannot fsync directory", dir, err);
    return Status::ok();
  }

  Status remove_file(const fs::path& path) override {
    if (::unlink(path.c_str()) != 0) return errno_status("cannot remove", path, errno);
    return Status::ok();
  }

  Status create_dirs(const fs::path& dir) override {
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (ec) return io_error("cannot create directory '" + dir.string() + "': " + ec.message());
    return Status::ok();
  }

  bool file_exists(const fs::path& path) override {
    struct stat st;
    return ::stat(path.c_str(), &st) == 0;
  }

  Result<std::int64_t> seconds_since_modified(const fs::path& path) override {
    struct stat st;
    if (::stat(path.c_str(), &st) != 0) return errno_status("cannot stat", path, errno);
    return static_cast<std::int64_t>(std::time(nullptr) - st.st_mtime);
  }

  Result<std::unique_ptr<MappedRegion>> map_file(const fs::path& path) override {
    // O_NONBLOCK: a fifo's open returns at once, and fstat refuses it (and any device),
    // which would otherwise block here or map nothing.
    int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) return errno_status("cannot open", path, errno);
    struct stat st;
    if (::fstat(fd, &st) != 0) {
      int err = errno;
      ::close(fd);
      return errno_status("cannot stat", path, err);
    }
    if (!S_ISREG(st.st_mode)) {
      ::close(fd);
      std::string message = "'";  // appended: GCC 12 misreads `"'" + string` (-Wrestrict)
      message += path.string();
      message += "' is ";
      message += kind_of_file(path, FollowLinks::kYes);
      message += ", not a regular file; scion reads only regular files: name a file";
      return invalid_argument(message);
    }
    const auto size = static_cast<std::size_t>(st.st_size);
    void* base = nullptr;
    if (size > 0) {
      base = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
      if (base == MAP_FAILED) {
        int err = errno;
        ::close(fd);
        return errno_status("cannot map", path, err);
      }
    }
    ::close(fd);  // the mapping keeps the file alive
    return std::unique_ptr<MappedRegion>(std::make_unique<PosixMappedRegion>(base, size));
  }

  Result<std::vector<fs::path>> list_files(const fs::path& dir) override {
    std::vector<fs::path> files;
    std::error_code ec;
    if (!fs::exists(dir, ec)) return files;
    for (fs::recursive_directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
      if (it->is_regular_file(ec)) files.push_back(it->path());
    }
    if (ec) return io_error("cannot list '" + dir.string() + "': " + ec.message());
    return files;
  }
};

}  // namespace

std::string file_size_limit_note() {
  struct rlimit limit;
  if (::getrlimit(RLIMIT_FSIZE, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY) return "";
  return "; the file size limit (ulimit -f) is " + std::to_string(limit.rlim_cur) +
         " bytes: raise it, or write the store where larger files are allowed";
}

Env& default_env() {
  static PosixEnv env;
  return env;
}

Status write_file_atomically(Env& env, const fs::path& path,
                             std::span<const std::span<const std::byte>> pieces) {
  auto file = env.new_temporary_file(path);
  if (!file.is_ok()) return file.status();
  for (std::span<const std::byte> piece : pieces) SCION_RETURN_IF_ERROR((*file)->append(piece));
  SCION_RETURN_IF_ERROR((*file)->sync());
  SCION_RETURN_IF_ERROR((*file)->publish(path));
  return env.sync_dir(path.has_parent_path() ? path.parent_path() : fs::path("."));
}

}  // namespace scion::lineage
