// The store under crashes, concurrency, corruption, version skew and full disks.
#include <signal.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <fstream>
#include <thread>

#include "lineage/digest.h"
#include "lineage/fsck.h"
#include "lineage/store.h"
#include "tests/unit/lineage_test_support.h"

using namespace scion;
using namespace scion::lineage;
using namespace scion::lineage::testing;

namespace {

// Commits `count` versions of model `name` (8 large tensors each, new bytes every time).
// Returns 0 on success, 2 on a busy store, 1 on any other error. Runs in child processes.
int write_models(const std::filesystem::path& dir, const std::string& name, int count,
                 std::uint32_t seed) {
  auto store = LineageStore::open(dir);
  if (!store.is_ok()) return store.status().code() == StatusCode::kBusy ? 2 : 1;
  for (int i = 0; i < count; ++i) {
    std::vector<std::vector<std::byte>> tensors;
    std::vector<ParameterWrite> params;
    for (int t = 0; t < 8; ++t) tensors.push_back(random_bytes(200 * 1024, seed + 100 * i + t));
    for (int t = 0; t < 8; ++t)
      params.push_back(f32_parameter(std::string("w").append(std::to_string(t)), tensors[t], name));
    // A recipe of its own for each version: a stored version is never rewritten.
    const std::string tag = name + std::to_string(i);
    const ModelRecord model = model_record(name, "", sha256_hex(std::as_bytes(std::span(tag))));
    auto run = (*store)->start_run(model, {RunKind::kTrain, model.recipe_hash, {}, seed, {}});
    if (!run.is_ok()) return run.status().code() == StatusCode::kBusy ? 2 : 1;
    Status status = (*store)->commit_model(*run, model, params);
    if (!status.is_ok()) {
      if (status.code() == StatusCode::kBusy &&
          status.message().find("store busy") != std::string::npos)
        return 2;
      std::fprintf(stderr, "child error: %s\n", status.message().c_str());
      return 1;
    }
  }
  return 0;
}

int wait_exit_code(pid_t pid) {
  int wstatus = 0;
  REQUIRE(waitpid(pid, &wstatus, 0) == pid);
  return WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : -WTERMSIG(wstatus);
}

void require_consistent(const std::filesystem::path& dir) {
  auto store = LineageStore::open(dir);
  REQUIRE(store.is_ok());
  auto report = check_store(**store);
  REQUIRE(report.is_ok());
  for (const auto& p : report->problems) UNSCOPED_INFO(p.subject << ": " << p.message);
  CHECK(report->ok());
  auto models = (*store)->models();
  REQUIRE(models.is_ok());
  for (const StoredModel& m : *models) {
    if (m.recipe_hash) CHECK((*store)->load_parameters(m.name).is_ok());
  }
}

}  // namespace

TEST_CASE("kill -9 in the middle of writing models leaves a store fsck passes",
          "[lineage][reliability]") {
  for (int delay_ms : {5, 30, 80, 150}) {
    TempDir dir;
    // A committed model first, so there is an old state to keep.
    REQUIRE(write_models(dir.path(), "kept", 1, 1) == 0);
    pid_t child = fork();
    REQUIRE(child >= 0);
    if (child == 0) _exit(write_models(dir.path(), "victim", 1000, 7));
    std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms));
    kill(child, SIGKILL);
    CHECK(wait_exit_code(child) == -SIGKILL);
    INFO("killed after " << delay_ms << " ms");
    require_consistent(dir.path());
    auto store = LineageStore::open(dir.path());
    REQUIRE(store.is_ok());
    CHECK((*store)->load_parameters("kept").is_ok());
  }
}

TEST_CASE("two processes writing one store both succeed or one reports busy",
          "[lineage][reliability]") {
  TempDir dir;
  REQUIRE(LineageStore::open(dir.path()).is_ok());  // create it once, then race
  pid_t first = fork();
  REQUIRE(first >= 0);
  if (first == 0) _exit(write_models(dir.path(), "left", 5, 11));
  pid_t second = fork();
  REQUIRE(second >= 0);
  if (second == 0) _exit(write_models(dir.path(), "right", 5, 22));
  const int a = wait_exit_code(first), b = wait_exit_code(second);
  CHECK((a == 0 || a == 2));
  CHECK((b == 0 || b == 2));
  CHECK((a == 0 || b == 0));
  require_consistent(dir.path());
}

TEST_CASE("a writer that cannot get the lock in time gets a clear busy error",
          "[lineage][reliability]") {
  TempDir dir;
  auto holder = LineageStore::open(dir.path());
  REQUIRE(holder.is_ok());
  REQUIRE((*holder)->db().exec("BEGIN IMMEDIATE").is_ok());
  StoreOptions impatient;
  impatient.busy_timeout_ms = 200;
  auto waiter = LineageStore::open(dir.path(), impatient);
  REQUIRE(waiter.is_ok());  // an up-to-date store opens without the write lock
  auto run = (*waiter)->start_run(model_record("m"), {});
  REQUIRE_FALSE(run.is_ok());
  CHECK(run.status().code() == StatusCode::kBusy);
  CHECK(run.status().message().find("store busy") != std::string::npos);
  REQUIRE((*holder)->db().exec("ROLLBACK").is_ok());
}

TEST_CASE("fsck names a corrupted object file", "[lineage][reliability]") {
  TempDir dir;
  REQUIRE(write_models(dir.path(), "m", 1, 3) == 0);
  auto store = LineageStore::open(dir.path());
  REQUIRE(store.is_ok());
  auto params = (*store)->parameters("m");
  REQUIRE(params.is_ok());
  const std::string digest = params->front().digest;
  const auto path = (*store)->objects().path_for(digest);
  {
    std::fstream file(path, std::ios::in | std::ios::out | std::ios::binary);
    file.seekp(100);
    file.put('\x42');
    file.put('\x43');
  }
  auto report = check_store(**store);
  REQUIRE(report.is_ok());
  REQUIRE(report->problems.size() == 1);
  CHECK(report->problems[0].subject == "object " + digest.substr(0, 12));
  CHECK(report->problems[0].message.find(path.string()) != std::string::npos);
  // Loading verifies digests too.
  auto loaded = (*store)->load_parameters("m");
  REQUIRE_FALSE(loaded.is_ok());
  CHECK(loaded.status().code() == StatusCode::kCorruption);
}

TEST_CASE("a store from a newer scion is refused with a clear message", "[lineage][reliability]") {
  TempDir dir;
  {
    auto store = LineageStore::open(dir.path());
    REQUIRE(store.is_ok());
    REQUIRE((*store)->db().exec("PRAGMA user_version = 99").is_ok());
  }
  auto store = LineageStore::open(dir.path());
  REQUIRE_FALSE(store.is_ok());
  CHECK(store.status().code() == StatusCode::kVersionMismatch);
  CHECK(store.status().message().find("schema version 99") != std::string::npos);
  CHECK(store.status().message().find("Upgrade scion") != std::string::npos);
}

TEST_CASE("another application's SQLite file is not taken for a store", "[lineage][reliability]") {
  TempDir dir;
  sqlite3* db = nullptr;
  REQUIRE(sqlite3_open((dir.path() / "lineage.db").c_str(), &db) == SQLITE_OK);
  REQUIRE(sqlite3_exec(db, "CREATE TABLE t (x); PRAGMA application_id = 42", nullptr, nullptr,
                       nullptr) == SQLITE_OK);
  sqlite3_close(db);
  auto store = LineageStore::open(dir.path());
  REQUIRE_FALSE(store.is_ok());
  CHECK(store.status().message().find("not a scion store") != std::string::npos);
}

TEST_CASE("a full disk during an object write loses nothing already committed",
          "[lineage][reliability]") {
  TempDir dir;
  FaultInjectionEnv env;
  StoreOptions options;
  options.env = &env;
  auto store = LineageStore::open(dir.path(), options);
  REQUIRE(store.is_ok());
  const auto old_bytes = random_bytes(300 * 1024, 1);
  auto run = (*store)->start_run(model_record("m"), {});
  REQUIRE(run.is_ok());
  REQUIRE((*store)
              ->commit_model(*run, model_record("m", "", std::string(64, '1')),
                             {f32_parameter("w", old_bytes, "m")})
              .is_ok());

  const auto new_bytes = random_bytes(300 * 1024, 2);
  auto retrain = (*store)->start_run(model_record("m"), {});
  REQUIRE(retrain.is_ok());
  env.bytes_until_disk_full = 1000;
  Status status = (*store)->commit_model(*retrain, model_record("m", "", std::string(64, '2')),
                                         {f32_parameter("w", new_bytes, "m")});
  CHECK(status.code() == StatusCode::kIoError);
  CHECK(status.message().find("No space left") != std::string::npos);
  env.bytes_until_disk_full = -1;
  CHECK_FALSE((*store)->objects().contains(sha256_hex(new_bytes)));

  auto loaded = (*store)->load_parameters("m");
  REQUIRE(loaded.is_ok());
  const auto& w = loaded->at("w");
  CHECK(std::equal(w.bytes.begin(), w.bytes.end(), old_bytes.begin(), old_bytes.end()));
  auto model = (*store)->find_model("m");
  REQUIRE(model.is_ok());
  CHECK((*model)->recipe_hash == std::string(64, '1'));
  require_consistent(dir.path());
}

TEST_CASE("a crash between writing and renaming an object leaves no object under its name",
          "[lineage][reliability]") {
  TempDir dir;
  FaultInjectionEnv env;
  StoreOptions options;
  options.env = &env;
  auto store = LineageStore::open(dir.path(), options);
  REQUIRE(store.is_ok());
  const auto bytes = random_bytes(100 * 1024, 9);
  auto run = (*store)->start_run(model_record("m"), {});
  REQUIRE(run.is_ok());
  env.fail_renames = true;
  CHECK_FALSE(
      (*store)->commit_model(*run, model_record("m"), {f32_parameter("w", bytes, "m")}).is_ok());
  CHECK_FALSE((*store)->objects().contains(sha256_hex(bytes)));
  auto parameter_rows = (*store)->db().query_int("SELECT count(*) FROM parameters");
  REQUIRE(parameter_rows.is_ok());
  CHECK(*parameter_rows == 0);
  require_consistent(dir.path());
}

// Three versions of model "m" (recipes a…, b…, c…; c current), two file objects each.
void write_three_versions(const std::filesystem::path& dir) {
  auto store = LineageStore::open(dir);
  REQUIRE(store.is_ok());
  for (char recipe : {'a', 'b', 'c'}) {
    const ModelRecord model = model_record("m", "", std::string(64, recipe));
    const auto w0 = random_bytes(100 * 1024, recipe), w1 = random_bytes(100 * 1024, recipe + 7);
    auto run = (*store)->start_run(model, {RunKind::kTrain, model.recipe_hash, {}, 1, {}});
    REQUIRE(run.is_ok());
    REQUIRE((*store)
                ->commit_model(*run, model, {f32_parameter("w0", w0, "m"), f32_parameter("w1", w1, "m")})
                .is_ok());
  }
}

TEST_CASE("kill -9 at any file removal of gc leaves a store fsck passes",
          "[lineage][reliability]") {
  // `gc --keep 0` removes versions a and b: four object files. Killed before the first,
  // second, ... removal, and once not at all.
  for (int kill_at = 0; kill_at <= 4; ++kill_at) {
    TempDir dir;
    write_three_versions(dir.path());
    pid_t child = fork();
    REQUIRE(child >= 0);
    if (child == 0) {
      FaultInjectionEnv env;
      env.removes_until_kill = kill_at;
      auto store = LineageStore::open(dir.path(), {.env = &env});
      if (!store.is_ok()) _exit(1);
      auto gc = collect_garbage(**store, /*dry_run=*/false, GcPolicy{.keep_spec_versions = 0});
      _exit(gc.is_ok() && gc->removed_objects.size() == 4 ? 0 : 1);
    }
    INFO("killed before removal " << kill_at);
    CHECK(wait_exit_code(child) == (kill_at < 4 ? -SIGKILL : 0));
    require_consistent(dir.path());
    auto store = LineageStore::open(dir.path());
    REQUIRE(store.is_ok());
    auto versions = (*store)->versions("m");
    REQUIRE(versions.is_ok());
    CHECK(versions->size() == 1);
    // What the killed gc left, the next one removes.
    auto again = collect_garbage(**store, /*dry_run=*/false, GcPolicy{.keep_spec_versions = 0});
    REQUIRE(again.is_ok());
    CHECK(again->removed_files.size() == static_cast<std::size_t>(4 - kill_at));
    auto after = check_store(**store);
    REQUIRE(after.is_ok());
    CHECK(after->ok());
    CHECK(after->notes.empty());
  }
}

TEST_CASE("gc --keep 0 keeps the versions the spec on disk names", "[lineage][reliability]") {
  TempDir dir;
  write_three_versions(dir.path());
  auto store = LineageStore::open(dir.path());
  REQUIRE(store.is_ok());
  // The spec was edited back to recipe a (not yet run): `scion run` would restore it.
  GcPolicy policy{.keep_spec_versions = 0, .spec_members = {{"m", std::string(64, 'a')}}};
  auto gc = collect_garbage(**store, /*dry_run=*/false, policy);
  REQUIRE(gc.is_ok());
  REQUIRE(gc->removed_versions.size() == 1);
  CHECK(gc->removed_versions[0].recipe_hash == std::string(64, 'b'));
  CHECK((*store)->load_parameters("m", std::string(64, 'a')).is_ok());
  CHECK((*store)->load_parameters("m", std::string(64, 'c')).is_ok());
}

TEST_CASE("gc removes what a crash left and nothing a model uses", "[lineage][reliability]") {
  TempDir dir;
  REQUIRE(write_models(dir.path(), "m", 1, 5) == 0);
  auto store = LineageStore::open(dir.path());
  REQUIRE(store.is_ok());
  // An object written by a run that never committed it, as a failed commit or a crash
  // before the transaction leaves it (the run ends failed, or abandoned once noticed).
  auto failed = (*store)->start_run(model_record("m"), {});
  REQUIRE(failed.is_ok());
  const auto orphan = random_bytes(100 * 1024, 77);
  const std::string orphan_digest = sha256_hex(orphan);
  REQUIRE((*store)->objects().put(orphan_digest, orphan).is_ok());
  REQUIRE((*store)->finish_run(*failed, RunStatus::kFailed, "injected").is_ok());
  auto before = check_store(**store);
  REQUIRE(before.is_ok());
  CHECK(before->ok());
  REQUIRE(before->notes.size() == 1);
  CHECK(before->notes[0].subject.find(orphan_digest.substr(2)) != std::string::npos);

  auto dry = collect_garbage(**store, /*dry_run=*/true);
  REQUIRE(dry.is_ok());
  REQUIRE(dry->removed_files.size() == 1);
  CHECK((*store)->objects().contains(orphan_digest));
  auto gc = collect_garbage(**store, /*dry_run=*/false);
  REQUIRE(gc.is_ok());
  CHECK(gc->removed_files.size() == 1);
  CHECK(gc->removed_objects.empty());
  CHECK_FALSE((*store)->objects().contains(orphan_digest));
  CHECK((*store)->load_parameters("m").is_ok());
  auto after = check_store(**store);
  REQUIRE(after.is_ok());
  CHECK(after->ok());
  CHECK(after->notes.empty());
}
