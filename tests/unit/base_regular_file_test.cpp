// base/regular_file.h: the guard never blocks on a fifo, never writes through a link.
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <string>

#include "base/json_number_range.h"
#include "base/regular_file.h"

namespace fs = std::filesystem;
using scion::FollowLinks;

namespace {

// A fresh folder under the system's temporary folder, removed at the end of the test.
struct TempFolder {
  fs::path path;
  TempFolder() {
    std::string pattern = (fs::temp_directory_path() / "scion-regular-file-XXXXXX").string();
    path = ::mkdtemp(pattern.data());
  }
  ~TempFolder() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

void write_text(const fs::path& path, const std::string& text) { std::ofstream(path) << text; }

std::string read_text(const fs::path& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

}  // namespace

TEST_CASE("a fifo is refused at once, not read", "[base][regular_file]") {
  TempFolder dir;
  const fs::path fifo = dir.path / "pipe";
  REQUIRE(::mkfifo(fifo.c_str(), 0644) == 0);
  // Without O_NONBLOCK, opening a fifo nobody writes blocks forever: this test would hang.
  auto read = scion::read_regular_file(fifo, FollowLinks::kYes);
  REQUIRE_FALSE(read.is_ok());
  CHECK(read.status().code() == scion::StatusCode::kInvalidArgument);
  CHECK(read.status().message().find("is a fifo, not a regular file") != std::string::npos);
  CHECK_FALSE(scion::check_regular_file(dir.path, FollowLinks::kYes).is_ok());
  CHECK(scion::check_regular_file(dir.path / "missing", FollowLinks::kYes).code() ==
        scion::StatusCode::kNotFound);
}

TEST_CASE("without following links, a link to a regular file is refused", "[base][regular_file]") {
  TempFolder dir;
  write_text(dir.path / "real", "text");
  fs::create_symlink(dir.path / "real", dir.path / "link");
  CHECK(scion::read_regular_file(dir.path / "link", FollowLinks::kYes).value() == "text");
  CHECK_FALSE(scion::read_regular_file(dir.path / "link", FollowLinks::kNo).is_ok());
}

TEST_CASE("a write replaces a link planted at the target instead of following it",
          "[base][regular_file]") {
  TempFolder dir;
  write_text(dir.path / "victim", "precious");
  fs::create_symlink(dir.path / "victim", dir.path / "target");
  REQUIRE(scion::write_file_replacing(dir.path / "target", "new").is_ok());
  CHECK(read_text(dir.path / "victim") == "precious");
  CHECK(fs::is_regular_file(fs::symlink_status(dir.path / "target")));
  CHECK(read_text(dir.path / "target") == "new");
  CHECK(std::distance(fs::directory_iterator(dir.path), fs::directory_iterator()) == 2);
}

TEST_CASE("folders below a root are never made through a link", "[base][regular_file]") {
  TempFolder dir;
  TempFolder outside;
  fs::create_directories(dir.path / "root");
  fs::create_symlink(outside.path, dir.path / "root" / "tags");
  const scion::Status made = scion::make_folders_below(dir.path / "root", "tags/inner");
  CHECK(made.code() == scion::StatusCode::kInvalidArgument);
  CHECK(made.message().find("symbolic link") != std::string::npos);
  CHECK(fs::is_empty(outside.path));
  CHECK(scion::make_folders_below(dir.path / "root", "a/b").is_ok());
  CHECK(fs::is_directory(dir.path / "root" / "a" / "b"));
}

TEST_CASE("a number beyond a 64-bit float is found with its key path", "[base][json]") {
  const auto found = scion::find_out_of_range_number(R"({"a": [1, {"b": 2}, -1e400]})");
  REQUIRE(found);
  CHECK(found->key_path == "a[2]");
  CHECK(found->literal == "-1e400");
  CHECK_FALSE(scion::find_out_of_range_number(R"({"a": 1e300, "b": 1e-400})"));
  CHECK(scion::describe_out_of_range_number("data.jsonl:3", *found).starts_with(
      "data.jsonl:3:"));
}
