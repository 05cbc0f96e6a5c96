#include "base/regular_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <random>

namespace scion {
namespace {

namespace fs = std::filesystem;

std::string kind_of_mode(mode_t mode) {
  if (S_ISDIR(mode)) return "a folder";
  if (S_ISFIFO(mode)) return "a fifo";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISLNK(mode)) return "a symbolic link";
  return "not a regular file";
}

// "'<path>'": messages are built by appending, which GCC 12's -Wrestrict does not
// misread (as it does `"literal" + std::string` chains).
std::string quoted(const fs::path& path) {
  std::string out = "'";
  out += path.string();
  out += "'";
  return out;
}

Status errno_error(const char* what, const fs::path& path, int err) {
  std::string message = quoted(path);
  if (err == ENOENT) {
    message += ": no such file; check the path";
    return not_found(message);
  }
  if (err == ELOOP) {
    message += " is a symbolic link, which scion does not follow here; put a regular file there "
               "instead";
    return invalid_argument(message);
  }
  message.insert(0, std::string(what) + " ");
  message += ": ";
  message += std::strerror(err);
  return io_error(message);
}

Status not_regular(const fs::path& path, mode_t mode) {
  std::string message = quoted(path);
  message += " is ";
  message += kind_of_mode(mode);
  message += ", not a regular file; scion reads only regular files: put a file there or name "
             "another path";
  return invalid_argument(message);
}

// An open descriptor of `path` known to be a regular file, in blocking mode again.
Result<int> open_regular(const fs::path& path, FollowLinks follow) {
  const int flags = O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY |
                    (follow == FollowLinks::kNo ? O_NOFOLLOW : 0);
  const int fd = ::open(path.c_str(), flags);
  if (fd < 0) return errno_error("cannot open", path, errno);
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    return errno_error("cannot check", path, err);
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return not_regular(path, st.st_mode);
  }
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  return fd;
}

// "<target>.tmp.<pid>.<n>", n from a counter started at a random value.
fs::path temporary_name(const fs::path& target) {
  static std::atomic<std::uint32_t> counter{std::random_device{}()};
  return target.string() + ".tmp." + std::to_string(::getpid()) + "." +
         std::to_string(counter.fetch_add(1));
}

Status write_all(int fd, std::string_view bytes, const fs::path& path) {
  while (!bytes.empty()) {
    const ssize_t n = ::write(fd, bytes.data(), bytes.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return errno_error("cannot write", path, errno);
    bytes.remove_prefix(static_cast<std::size_t>(n));
  }
  return ::fsync(fd) == 0 ? Status::ok() : errno_error("cannot fsync", path, errno);
}

}  // namespace

std::string kind_of_file(const fs::path& path, FollowLinks follow) {
  struct stat st;
  const int rc = follow == FollowLinks::kYes ? ::stat(path.c_str(), &st) : ::lstat(path.c_str(), &st);
  if (rc != 0) return "missing";
  return S_ISREG(st.st_mode) ? "a regular file" : kind_of_mode(st.st_mode);
}

Status check_regular_file(const fs::path& path, FollowLinks follow) {
  auto fd = open_regular(path, follow);
  if (!fd) return fd.status();
  ::close(*fd);
  return Status::ok();
}

Result<std::string> read_regular_file(const fs::path& path, FollowLinks follow) {
  auto fd = open_regular(path, follow);
  if (!fd) return fd.status();
  std::string contents;
  char buffer[1 << 16];
  for (;;) {
    const ssize_t n = ::read(*fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int err = errno;
      ::close(*fd);
      if (n < 0) return errno_error("cannot read", path, err);
      return contents;
    }
    contents.append(buffer, static_cast<std::size_t>(n));
  }
}

Status make_folders_below(const fs::path& root, const fs::path& relative) {
  std::error_code ec;
  fs::create_directories(root, ec);
  if (ec) {
    std::string message = "cannot create " + quoted(root);
    message += ": ";
    message += ec.message();
    return io_error(message);
  }
  fs::path folder = root;
  for (const fs::path& part : relative) {
    folder /= part;
    if (::mkdir(folder.c_str(), 0755) == 0) continue;
    if (errno != EEXIST) return errno_error("cannot create", folder, errno);
    struct stat st;
    if (::lstat(folder.c_str(), &st) != 0) return errno_error("cannot check", folder, errno);
    if (!S_ISDIR(st.st_mode)) {
      std::string message = quoted(folder);
      message += " is ";
      message += kind_of_mode(st.st_mode);
      message += ", not a folder; scion writes only into folders it can see, never through "
                 "links: remove it, or write to a new folder";
      return invalid_argument(message);
    }
  }
  return Status::ok();
}

Status write_file_replacing(const fs::path& path, std::string_view bytes) {
  for (int attempt = 0; attempt < 100; ++attempt) {
    const fs::path temporary = temporary_name(path);
    const int fd =
        ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd < 0 && errno == EEXIST) continue;
    if (fd < 0) return errno_error("cannot create", temporary, errno);
    Status written = write_all(fd, bytes, path);
    if (::close(fd) != 0 && written.is_ok()) written = errno_error("cannot close", path, errno);
    if (written.is_ok() && ::rename(temporary.c_str(), path.c_str()) != 0)
      written = errno_error("cannot rename", temporary, errno);
    if (!written.is_ok()) ::unlink(temporary.c_str());
    return written;
  }
  std::string message = "cannot create a temporary file beside " + quoted(path);
  message += ": 100 names are taken";
  return io_error(message);
}

}  // namespace scion
