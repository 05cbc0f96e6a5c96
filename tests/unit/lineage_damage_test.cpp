// A damaged store is refused, never "repaired" into data loss (issue #29): an emptied or
// missing lineage.db beside objects, object files no run wrote, parameter rows whose shape
// and dtype do not fit their object, parent links in a cycle. And the files the store and
// the exports write: unnamed while written, published whole, never through a planted name.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <fstream>

#include "lineage/digest.h"
#include "lineage/fsck.h"
#include "lineage/store.h"
#include "tests/unit/lineage_test_support.h"
#include "workbench/staged_folder.h"

using namespace scion;
using namespace scion::lineage;
using namespace scion::lineage::testing;

namespace {

namespace fs = std::filesystem;

// A store in `dir` holding model "m" with one tensor large enough to be an object file.
void store_one_model(const fs::path& dir, const std::vector<std::byte>& bytes) {
  auto store = LineageStore::open(dir);
  REQUIRE(store.is_ok());
  auto run = (*store)->start_run(model_record("m"), {});
  REQUIRE(run.is_ok());
  REQUIRE(
      (*store)->commit_model(*run, model_record("m"), {f32_parameter("w", bytes, "m")}).is_ok());
}

void exec(const fs::path& dir, const std::string& sql) {
  auto store = LineageStore::open(dir);
  REQUIRE(store.is_ok());
  REQUIRE((*store)->db().exec(sql).is_ok());
}

std::size_t files_in(const fs::path& dir) {
  std::size_t n = 0;
  for (const auto& entry : fs::recursive_directory_iterator(dir))
    if (entry.is_regular_file()) ++n;
  return n;
}

StoreOptions reading() {
  StoreOptions options;
  options.read_only = true;
  return options;
}

}  // namespace

TEST_CASE("an emptied lineage.db beside objects is refused by readers and writers, unchanged",
          "[lineage][damage]") {
  TempDir dir;
  const auto bytes = random_bytes(100 * 1024, 3);
  store_one_model(dir.path(), bytes);
  // What `: > .scion/lineage.db; rm -f .scion/lineage.db-*` leaves.
  std::ofstream(dir.path() / "lineage.db", std::ios::trunc).close();
  for (const char* side : {"lineage.db-wal", "lineage.db-shm"}) fs::remove(dir.path() / side);

  for (const StoreOptions& options : {reading(), StoreOptions()}) {
    auto store = LineageStore::open(dir.path(), options);
    REQUIRE_FALSE(store.is_ok());
    CHECK(store.status().code() == StatusCode::kCorruption);
    CHECK(store.status().message().find("missing or empty but 1 objects exist") !=
          std::string::npos);
    CHECK(store.status().message().find("restore lineage.db from a backup") != std::string::npos);
    CHECK(fs::file_size(dir.path() / "lineage.db") == 0);  // no schema was written
  }
  // A missing lineage.db is the same: no command creates a new one over the objects.
  fs::remove(dir.path() / "lineage.db");
  auto created = LineageStore::open(dir.path());
  CHECK(created.status().code() == StatusCode::kCorruption);
  CHECK_FALSE(fs::exists(dir.path() / "lineage.db"));
  CHECK((*ObjectStore(default_env(), dir.path() / "objects").list()).digests.size() == 1);
}

TEST_CASE("a reader never writes a schema or migrates one", "[lineage][damage]") {
  TempDir dir;
  // A store whose creation never finished: a database without a schema, no objects.
  std::ofstream(dir.path() / "lineage.db").close();
  auto reader = LineageStore::open(dir.path(), reading());
  REQUIRE_FALSE(reader.is_ok());
  CHECK(reader.status().message().find("never fully created") != std::string::npos);
  CHECK(fs::file_size(dir.path() / "lineage.db") == 0);
  // A writer finishes it, as before.
  REQUIRE(LineageStore::open(dir.path()).is_ok());
  // An older schema is upgraded by writers only.
  exec(dir.path(), "PRAGMA user_version = 2");
  auto old = LineageStore::open(dir.path(), reading());
  REQUIRE_FALSE(old.is_ok());
  CHECK(old.status().message().find("schema version 2, not this scion's") != std::string::npos);
}

TEST_CASE("gc removes object files a run wrote and keeps those no run explains",
          "[lineage][damage]") {
  TempDir dir;
  store_one_model(dir.path(), random_bytes(100 * 1024, 4));
  auto store = LineageStore::open(dir.path());
  REQUIRE(store.is_ok());
  const auto orphan = random_bytes(100 * 1024, 5);
  const std::string digest = sha256_hex(orphan);
  REQUIRE((*store)->objects().put(digest, orphan).is_ok());
  // Written a day after every run of the store: lineage.db knows nothing that made it
  // (a backup restored over newer work).
  const fs::path file = (*store)->objects().path_for(digest);
  const struct timespec later[2] = {{std::time(nullptr) + 86400, 0},
                                    {std::time(nullptr) + 86400, 0}};
  REQUIRE(::utimensat(AT_FDCWD, file.c_str(), later, 0) == 0);

  auto fsck = check_store(**store);
  REQUIRE(fsck.is_ok());
  REQUIRE(fsck->notes.size() == 1);
  CHECK(fsck->notes[0].message.find("--force-orphans") != std::string::npos);
  auto gc = collect_garbage(**store, /*dry_run=*/false);
  REQUIRE(gc.is_ok());
  CHECK(gc->removed_files.empty());
  REQUIRE(gc->kept_orphans.size() == 1);
  CHECK(gc->orphan_bytes == static_cast<std::int64_t>(orphan.size()));
  CHECK((*store)->objects().contains(digest));
  auto forced = collect_garbage(**store, /*dry_run=*/false, {.force_orphans = true});
  REQUIRE(forced.is_ok());
  CHECK(forced->removed_files.size() == 1);
  CHECK_FALSE((*store)->objects().contains(digest));
  CHECK((*store)->load_parameters("m").is_ok());
}

TEST_CASE("a parameter row whose shape or dtype does not fit its object is refused on loading",
          "[lineage][damage]") {
  TempDir dir;
  store_one_model(dir.path(), random_bytes(1024, 6));  // 256 floats, inline
  for (const char* change : {"dtype = 'F16'", "shape = '[4000000, 64000]'", "shape = '[-256]'",
                             "shape = '\"oops\"'", "shape = '[9223372036854775807, 2]'"}) {
    INFO(change);
    exec(dir.path(), std::string("UPDATE version_parameters SET ") + change);
    auto store = LineageStore::open(dir.path(), reading());
    REQUIRE(store.is_ok());
    auto loaded = (*store)->load_parameters("m");
    REQUIRE_FALSE(loaded.is_ok());
    CHECK(loaded.status().code() == StatusCode::kCorruption);
    CHECK(loaded.status().message().find("parameter 'w'") != std::string::npos);
    CHECK(loaded.status().message().find("scion fsck") != std::string::npos);
    exec(dir.path(), "UPDATE version_parameters SET dtype = 'F32', shape = '[256]'");
    REQUIRE((*LineageStore::open(dir.path(), reading()))->load_parameters("m").is_ok());
  }
}

TEST_CASE("parent links in a cycle are damage, not models that are not trained",
          "[lineage][damage]") {
  TempDir dir;
  {
    auto store = LineageStore::open(dir.path());
    REQUIRE(store.is_ok());
    const auto bytes = random_bytes(64, 7);
    for (const auto& [name, parent] :
         {std::pair{"base", ""}, std::pair{"a", "base"}, std::pair{"b", "a"}}) {
      auto run = (*store)->start_run(model_record(name, parent), {});
      REQUIRE(run.is_ok());
      REQUIRE(
          (*store)
              ->commit_model(*run, model_record(name, parent), {f32_parameter("w", bytes, name)})
              .is_ok());
    }
  }
  exec(dir.path(),
       "UPDATE models SET parent_id = (SELECT id FROM models WHERE name = 'b') "
       "WHERE name = 'a'");
  auto store = LineageStore::open(dir.path(), reading());
  REQUIRE(store.is_ok());
  auto models = (*store)->models();
  REQUIRE_FALSE(models.is_ok());
  CHECK(models.status().code() == StatusCode::kCorruption);
  CHECK(models.status().message().find("form a cycle") != std::string::npos);
  CHECK(models.status().message().find("'a'") != std::string::npos);
  auto found = (*store)->find_model("b");
  CHECK(found.status().code() == StatusCode::kCorruption);
}

TEST_CASE("a file being written has no name until it is complete", "[lineage][damage]") {
  TempDir dir;
  const fs::path target = dir.path() / "model.safetensors";
  auto file = default_env().new_temporary_file(target);
  REQUIRE(file.is_ok());
  const auto bytes = random_bytes(4096, 8);
  REQUIRE((*file)->append(bytes).is_ok());
  // A process killed now (kill -9) would leave nothing beside the target.
  CHECK(files_in(dir.path()) == 0);
  REQUIRE((*file)->sync().is_ok());
  REQUIRE((*file)->publish(target).is_ok());
  CHECK(files_in(dir.path()) == 1);
  CHECK(fs::file_size(target) == bytes.size());
  // Abandoned before publishing, it leaves nothing either.
  {
    auto dropped = default_env().new_temporary_file(target);
    REQUIRE(dropped.is_ok());
    REQUIRE((*dropped)->append(bytes).is_ok());
  }
  CHECK(files_in(dir.path()) == 1);
}

TEST_CASE("an exported folder appears whole, and replaces only an earlier export",
          "[lineage][damage]") {
  TempDir dir;
  const fs::path out = dir.path() / "exported";
  auto write_two = [&](const fs::path& staging) -> Status {
    CHECK_FALSE(fs::exists(out));  // nothing under the target's name while writing
    std::ofstream(staging / "model.safetensors") << "weights";
    std::ofstream(staging / "config.json") << "{}";
    return Status::ok();
  };
  REQUIRE(workbench::write_folder_atomically(out, write_two).is_ok());
  CHECK(files_in(out) == 2);
  CHECK(files_in(dir.path()) == 2);  // no staging folder left

  // A failure part way leaves the target as it was and no staging folder.
  fs::remove_all(out);
  auto half = [&](const fs::path& staging) -> Status {
    std::ofstream(staging / "model.safetensors") << "weights";
    return io_error("injected: killed before config.json");
  };
  CHECK_FALSE(workbench::write_folder_atomically(out, half).is_ok());
  CHECK_FALSE(fs::exists(out));
  CHECK(files_in(dir.path()) == 0);

  // Over an earlier export: replaced. Over a folder with other files: refused, unchanged.
  REQUIRE(workbench::write_folder_atomically(out, write_two).is_ok());
  auto rewrite = [&](const fs::path& staging) -> Status {
    std::ofstream(staging / "model.safetensors") << "new weights";
    std::ofstream(staging / "config.json") << "{}";
    return Status::ok();
  };
  REQUIRE(workbench::write_folder_atomically(out, rewrite).is_ok());
  CHECK(fs::file_size(out / "model.safetensors") == std::string("new weights").size());
  std::ofstream(out / "notes.txt") << "mine";
  auto refused = workbench::write_folder_atomically(out, rewrite);
  CHECK(refused.code() == StatusCode::kInvalidArgument);
  CHECK(refused.message().find("notes.txt") != std::string::npos);
  CHECK(fs::exists(out / "notes.txt"));
  CHECK(files_in(dir.path()) == 3);
}
