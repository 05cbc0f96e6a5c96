// History that stays readable: runs of killed processes marked abandoned, fsck's checks of
// the schema, of trained models' parameters and of parent links, read-only stores, and
// recorded recipes shown in the spec's own words.
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include "lineage/fsck.h"
#include "lineage/spec_records.h"
#include "spec/spec_json.h"
#include "lineage/store.h"
#include "tests/unit/lineage_test_support.h"

using namespace scion;
using namespace scion::lineage;
using namespace scion::lineage::testing;

namespace {

// A store holding model `name` with two parameters (one large enough to be a file).
void store_model(const std::filesystem::path& dir, const std::string& name,
                 const std::string& parent = "") {
  auto store = LineageStore::open(dir);
  REQUIRE(store.is_ok());
  const auto small = random_bytes(64, 1), large = random_bytes(128 * 1024, 2);
  auto run = (*store)->start_run(model_record(name, parent), {RunKind::kTrain, std::string(64, 'a'), {}, 1, {}});
  REQUIRE(run.is_ok());
  REQUIRE((*store)->commit_model(*run, model_record(name, parent),
                                 {f32_parameter("w.small", small, name), f32_parameter("w.large", large, name)})
              .is_ok());
}

FsckReport fsck(const std::filesystem::path& dir) {
  StoreOptions options;
  options.read_only = true;
  auto store = LineageStore::open(dir, options);
  REQUIRE(store.is_ok());
  auto report = check_store(**store);
  REQUIRE(report.is_ok());
  return *report;
}

bool has_problem(const FsckReport& report, const std::string& subject, const std::string& text) {
  for (const FsckFinding& p : report.problems)
    if (p.subject.find(subject) != std::string::npos && p.message.find(text) != std::string::npos)
      return true;
  return false;
}

void exec(const std::filesystem::path& dir, const std::string& sql) {
  auto db = SqliteDb::open(dir / "lineage.db", false, 1000);
  REQUIRE(db.is_ok());
  REQUIRE((*db)->exec(sql).is_ok());
}

// A pid that no process has: a child that has exited and been reaped.
std::int64_t dead_pid() {
  pid_t child = fork();
  REQUIRE(child >= 0);
  if (child == 0) _exit(0);
  int status = 0;
  REQUIRE(waitpid(child, &status, 0) == child);
  return child;
}

RunStatus status_of(LineageStore& store, std::int64_t run) {
  auto runs = store.runs("", 0);
  REQUIRE(runs.is_ok());
  for (const RunRecord& r : *runs)
    if (r.id == run) return r.status;
  FAIL("run " << run << " not found");
  return RunStatus::kRunning;
}

}  // namespace

TEST_CASE("fsck passes a sound store, schema included", "[lineage][history]") {
  TempDir dir;
  store_model(dir.path(), "base");
  store_model(dir.path(), "child", "base");
  FsckReport report = fsck(dir.path());
  for (const auto& p : report.problems) UNSCOPED_INFO(p.subject << ": " << p.message);
  CHECK(report.ok());
  CHECK(report.complete);
}

TEST_CASE("fsck reports a trained model whose parameter rows are gone", "[lineage][history]") {
  TempDir dir;
  store_model(dir.path(), "base");
  exec(dir.path(),
       "DELETE FROM version_parameters WHERE version_id = "
       "(SELECT version_id FROM models WHERE name = 'base')");
  CHECK(has_problem(fsck(dir.path()), "model 'base'", "has no parameters"));
}

TEST_CASE("fsck reports parent links that form a cycle", "[lineage][history]") {
  TempDir dir;
  store_model(dir.path(), "base");
  store_model(dir.path(), "child", "base");
  SECTION("a model that is its own parent") {
    exec(dir.path(), "UPDATE models SET parent_id = id WHERE name = 'base'");
    CHECK(has_problem(fsck(dir.path()), "model 'base'", "cycle (base -> base)"));
  }
  SECTION("two models that are each other's parent") {
    exec(dir.path(),
         "UPDATE models SET parent_id = (SELECT id FROM models WHERE name = 'child') WHERE name = 'base'");
    FsckReport report = fsck(dir.path());
    CHECK(has_problem(report, "model 'base'", "cycle (base -> child -> base)"));
    CHECK(has_problem(report, "model 'child'", "cycle"));
  }
}

TEST_CASE("fsck compares the schema with the one scion creates", "[lineage][history]") {
  TempDir dir;
  store_model(dir.path(), "base");
  SECTION("a dropped table") {
    exec(dir.path(), "DROP TABLE assertion_violations");
    FsckReport report = fsck(dir.path());
    CHECK(has_problem(report, "table assertion_violations", "missing from the schema"));
    CHECK_FALSE(report.complete);
  }
  SECTION("a dropped index") {
    exec(dir.path(), "DROP INDEX version_parameters_digest");
    FsckReport report = fsck(dir.path());
    CHECK(has_problem(report, "index version_parameters_digest", "missing"));
    CHECK(report.complete);
  }
  SECTION("a changed table") {
    exec(dir.path(), "ALTER TABLE runs DROP COLUMN message");
    FsckReport report = fsck(dir.path());
    CHECK(has_problem(report, "table runs", "differs from the schema"));
    CHECK_FALSE(report.complete);
  }
}

TEST_CASE("a writer marks runs whose process is gone as abandoned", "[lineage][history]") {
  TempDir dir;
  std::int64_t killed = 0, alive = 0, elsewhere = 0;
  {
    auto store = LineageStore::open(dir.path());
    REQUIRE(store.is_ok());
    for (std::int64_t* run : {&killed, &alive, &elsewhere}) {
      auto id = (*store)->start_run(model_record("m"), {RunKind::kTrain, std::string(64, 'a'), {}, 1, {}});
      REQUIRE(id.is_ok());
      *run = *id;
    }
  }
  exec(dir.path(), "UPDATE runs SET pid = " + std::to_string(dead_pid()) + " WHERE id = " +
                       std::to_string(killed));
  exec(dir.path(), "UPDATE runs SET pid = " + std::to_string(dead_pid()) +
                       ", host = 'another-host' WHERE id = " + std::to_string(elsewhere));

  StoreOptions read_only;
  read_only.read_only = true;
  auto reader = LineageStore::open(dir.path(), read_only);
  REQUIRE(reader.is_ok());
  CHECK(status_of(**reader, killed) == RunStatus::kRunning);  // a reader changes nothing
  CHECK((*reader)->abandoned_on_open().empty());

  auto writer = LineageStore::open(dir.path());
  REQUIRE(writer.is_ok());
  CHECK(status_of(**writer, killed) == RunStatus::kAbandoned);
  CHECK(status_of(**writer, alive) == RunStatus::kRunning);      // this very process
  CHECK(status_of(**writer, elsewhere) == RunStatus::kRunning);  // cannot tell on another host
  REQUIRE((*writer)->abandoned_on_open().size() == 1);
  CHECK((*writer)->abandoned_on_open()[0].id == killed);
  auto runs = (*writer)->runs("m", 0);
  REQUIRE(runs.is_ok());
  for (const RunRecord& r : *runs)
    if (r.id == killed) CHECK(r.message.find("abandoned: its process (pid") != std::string::npos);
}

TEST_CASE("a read-only store reads and refuses writes", "[lineage][history]") {
  TempDir dir;
  store_model(dir.path(), "base");
  StoreOptions options;
  options.read_only = true;
  auto store = LineageStore::open(dir.path(), options);
  REQUIRE(store.is_ok());
  CHECK((*store)->load_parameters("base").is_ok());
  auto run = (*store)->start_run(model_record("other"), {RunKind::kTrain, std::string(64, 'b'), {}, 1, {}});
  CHECK_FALSE(run.is_ok());
  TempDir empty;
  auto none = LineageStore::open(empty.path(), options);
  CHECK(none.status().code() == StatusCode::kNotFound);
  CHECK_FALSE(std::filesystem::exists(empty.path() / "lineage.db"));
}

TEST_CASE("missing_objects names parameters whose object file is gone", "[lineage][history]") {
  TempDir dir;
  store_model(dir.path(), "base");
  auto store = LineageStore::open(dir.path());
  REQUIRE(store.is_ok());
  auto none = (*store)->missing_objects("base");
  REQUIRE(none.is_ok());
  CHECK(none->empty());
  auto params = (*store)->parameters("base");
  REQUIRE(params.is_ok());
  for (const StoredParameter& p : *params)
    if (p.name == "w.large") std::filesystem::remove((*store)->objects().path_for(p.digest));
  auto missing = (*store)->missing_objects("base");
  REQUIRE(missing.is_ok());
  REQUIRE(missing->size() == 1);
  CHECK((*missing)[0].name == "w.large");
}

TEST_CASE("a recorded recipe reads in the spec's own words", "[lineage][history]") {
  const nlohmann::json canonical = {
      {"train",
       {{"objective", 2},
        {"validation_split", static_cast<double>(0.1f)},
        {"optimizer", {{"type", 0}, {"lr", static_cast<double>(1e-3f)}, {"betas", {static_cast<double>(0.9f), static_cast<double>(0.999f)}}}},
        {"schedule", {{"type", 2}}},
        {"data", {{"format", 0}}},
        {"seed", "18446744073709551615"}}},
      {"adapt", {{"bottleneck", {{"placement", 1}}}}},
      {"exact", 0.1}};
  const nlohmann::json words = spec::in_spec_words(canonical);
  CHECK(words["train"]["objective"] == "classification");
  CHECK(words["train"]["optimizer"]["type"] == "adamw");
  CHECK(words["train"]["schedule"]["type"] == "cosine");
  CHECK(words["train"]["data"]["format"] == "jsonl");
  CHECK(words["adapt"]["bottleneck"]["placement"] == "ffn");
  CHECK(words["train"]["validation_split"].dump() == "0.1");
  CHECK(words["train"]["optimizer"]["lr"].dump() == "0.001");
  CHECK(words["train"]["optimizer"]["betas"].dump() == "[0.9,0.999]");
  CHECK(words["train"]["seed"].get<std::uint64_t>() == 18446744073709551615ull);
  CHECK(words["exact"].dump() == "0.1");  // a double that is no float stays as it is
}

TEST_CASE("a model's method label takes a registered method's details from its block",
          "[lineage][history]") {
  // LoRA's block (runtime/adapters/lora/lora_spec.h) adds its rank and options; a method
  // without details is its key alone.
  CHECK(method_label({{"lora", {{"rank", 8}, {"use_dora", true}, {"use_rslora", true}}},
                      {"head", nlohmann::json::object()}}) == "head+lora r=8 dora rslora");
  CHECK(method_label({{"lora", {{"rank", 4}, {"use_dora", false}}}}) == "lora r=4");
  CHECK(method_label({{"ia3", {{"targets", {"k"}}}}}) == "ia3");
  CHECK(method_label(nlohmann::json::object()) == "base");
}
