// Versions (schema version 4): every recipe's parameters kept, restored by a pointer move
// recorded as a run; the migration of a version-3 store; keyed test outcomes; spec
// versions, tags and what `gc --keep` keeps.
#include <catch2/catch.hpp>

#include "lineage/digest.h"
#include "lineage/fsck.h"
#include "lineage/schema.h"
#include "lineage/store.h"
#include "tests/unit/lineage_test_support.h"

using namespace scion;
using namespace scion::lineage;
using namespace scion::lineage::testing;

namespace {

std::unique_ptr<LineageStore> open_store(const std::filesystem::path& dir) {
  auto store = LineageStore::open(dir);
  REQUIRE(store.is_ok());
  return std::move(*store);
}

std::int64_t count(LineageStore& store, const std::string& sql) {
  auto n = store.db().query_int(sql);
  REQUIRE(n.is_ok());
  return *n;
}

const std::string kR1(64, '1'), kR2(64, '2'), kBase(64, 'b');

// Stores `bytes` as model `name`'s parameters for `recipe`; returns the run.
std::int64_t commit(LineageStore& store, const std::string& name, const std::string& parent,
                    const std::string& recipe, const std::vector<std::byte>& bytes,
                    const std::vector<std::byte>& trunk) {
  const ModelRecord record = model_record(name, parent, recipe);
  RunStart start{.kind = parent.empty() ? RunKind::kTrain : RunKind::kAdapt, .recipe_hash = recipe};
  start.hyperparameters = {{"parent_recipe", parent.empty() ? "" : kBase}};
  auto run = store.start_run(record, start);
  REQUIRE(run.is_ok());
  std::vector<ParameterWrite> writes = {f32_parameter("w", trunk, "base", parent.empty())};
  if (!parent.empty()) writes.push_back(f32_parameter("lora." + name, bytes, name));
  REQUIRE(store.commit_model(*run, record, writes).is_ok());
  return *run;
}

std::string digest_of(LineageStore& store, const std::string& model, const std::string& name) {
  auto loaded = store.load_parameters(model);
  REQUIRE(loaded.is_ok());
  return loaded->at(name).digest;
}

}  // namespace

TEST_CASE("every recipe's version is kept and a restore moves the pointer", "[lineage]") {
  TempDir dir;
  auto store = open_store(dir.path());
  const auto trunk = random_bytes(128 * 1024, 1), v1 = random_bytes(512, 2), v2 = random_bytes(512, 3);
  commit(*store, "base", "", kBase, {}, trunk);
  const std::int64_t first = commit(*store, "a", "base", kR1, v1, trunk);
  const std::int64_t second = commit(*store, "a", "base", kR2, v2, trunk);
  CHECK(digest_of(*store, "a", "lora.a") == sha256_hex(v2));

  auto versions = store->versions("a");
  REQUIRE(versions.is_ok());
  REQUIRE(versions->size() == 2);
  CHECK((*versions)[0].recipe_hash == kR2);  // newest first
  CHECK((*versions)[0].current);
  CHECK((*versions)[1].run == first);
  CHECK((*versions)[1].parent == "base");
  CHECK((*versions)[1].parent_recipe_hash == kBase);
  auto old = store->load_parameters("a", kR1);
  REQUIRE(old.is_ok());
  CHECK(old->at("lora.a").digest == sha256_hex(v1));

  const std::int64_t objects = count(*store, "SELECT count(*) FROM objects");
  auto restored = store->restore_version(model_record("a", "base", kR1));
  REQUIRE(restored.is_ok());
  CHECK(digest_of(*store, "a", "lora.a") == sha256_hex(v1));
  CHECK(count(*store, "SELECT count(*) FROM objects") == objects);  // nothing copied
  auto runs = store->runs("a", 0);
  REQUIRE(runs.is_ok());
  CHECK(runs->front().id == *restored);
  CHECK(runs->front().kind == RunKind::kRestore);
  CHECK(runs->front().status == RunStatus::kFinished);
  CHECK(runs->front().hyperparameters["restored_run"] == first);
  auto model = store->find_model("a");
  REQUIRE(model.is_ok());
  CHECK((*model)->recipe_hash == kR1);
  auto at = store->model_at("a", kR2);
  REQUIRE(at.is_ok());
  CHECK(at->recipe_hash == kR2);
  CHECK(at->shared_with_parent == 1);
  CHECK(at->own_count == 1);
  CHECK(store->versions("a")->at(0).run == second);

  auto missing = store->restore_version(model_record("a", "base", std::string(64, '9')));
  CHECK(missing.status().code() == StatusCode::kNotFound);

  auto report = check_store(*store);
  REQUIRE(report.is_ok());
  CHECK(report->ok());
}

TEST_CASE("a stored version is never rewritten: reproduced, or refused", "[lineage]") {
  TempDir dir;
  auto store = open_store(dir.path());
  const auto trunk = random_bytes(128 * 1024, 1), v1 = random_bytes(512, 2);
  commit(*store, "base", "", kBase, {}, trunk);
  const std::int64_t made = commit(*store, "a", "base", kR1, v1, trunk);
  const std::string digest = digest_of(*store, "a", "lora.a");
  const std::int64_t version = count(*store, "SELECT version_id FROM models WHERE name = 'a'");

  // Trained again to the same bytes (run --force, deterministic): the version stays as it
  // was, made by the first run, and becomes current.
  const std::int64_t again = commit(*store, "a", "base", kR1, v1, trunk);
  CHECK(again != made);
  CHECK(count(*store, "SELECT version_id FROM models WHERE name = 'a'") == version);
  CHECK(store->versions("a")->at(0).run == made);

  // Other bytes under the same recipe (another thread count; another checkpoint imported
  // over it): refused with the tensors named, nothing changed.
  const ModelRecord record = model_record("a", "base", kR1);
  auto run = store->start_run(record, {.kind = RunKind::kAdapt, .recipe_hash = kR1});
  REQUIRE(run.is_ok());
  const auto other = random_bytes(512, 9);
  Status refused = store->commit_model(
      *run, record, {f32_parameter("w", trunk, "base", false), f32_parameter("lora.a", other, "a")});
  CHECK(refused.code() == StatusCode::kAlreadyExists);
  CHECK(refused.message().find("1 of 2 tensors differ ('lora.a')") != std::string::npos);
  CHECK(refused.message().find("made by run " + std::to_string(made)) != std::string::npos);
  CHECK(digest_of(*store, "a", "lora.a") == digest);
  CHECK(store->versions("a")->size() == 1);
  auto report = check_store(*store);
  REQUIRE(report.is_ok());
  CHECK(report->ok());
}

TEST_CASE("gc --keep keeps current, tagged and recent spec versions and their parents",
          "[lineage]") {
  TempDir dir;
  auto store = open_store(dir.path());
  const auto trunk = random_bytes(1024, 1), v1 = random_bytes(96 * 1024, 2),
             v2 = random_bytes(96 * 1024, 3);
  commit(*store, "base", "", kBase, {}, trunk);
  commit(*store, "a", "base", kR1, v1, trunk);
  REQUIRE(store->tag_spec_version("first", "scion.yaml", {{"base", kBase}, {"a", kR1}}).is_ok());
  commit(*store, "a", "base", kR2, v2, trunk);
  REQUIRE(store->record_spec_version("scion.yaml", {{"base", kBase}, {"a", kR2}}).is_ok());

  auto nothing = collect_garbage(*store, /*dry_run=*/false);
  REQUIRE(nothing.is_ok());
  CHECK(nothing->removed_versions.empty());  // without --keep every version stays
  auto kept = collect_garbage(*store, false, {.keep_spec_versions = 0});
  REQUIRE(kept.is_ok());
  CHECK(kept->removed_versions.empty());  // kR1 is tagged, kR2 current
  REQUIRE(store->delete_tag("first").is_ok());
  CHECK(store->delete_tag("first").code() == StatusCode::kNotFound);
  auto dry = collect_garbage(*store, true, {.keep_spec_versions = 0});
  REQUIRE(dry.is_ok());
  REQUIRE(dry->removed_versions.size() == 1);
  CHECK(store->versions("a")->size() == 2);  // a dry run changes nothing
  auto removed = collect_garbage(*store, false, {.keep_spec_versions = 0});
  REQUIRE(removed.is_ok());
  REQUIRE(removed->removed_versions.size() == 1);
  CHECK(removed->removed_versions[0].recipe_hash == kR1);
  CHECK(removed->removed_objects == std::vector<std::string>{sha256_hex(v1)});
  CHECK(store->versions("a")->size() == 1);
  CHECK_FALSE(store->objects().contains(sha256_hex(v1)));
  auto spec_versions = store->spec_versions();
  REQUIRE(spec_versions.is_ok());
  CHECK(spec_versions->empty());  // untagged and beyond the newest 0
  auto report = check_store(*store);
  REQUIRE(report.is_ok());
  CHECK(report->ok());
}

TEST_CASE("a test outcome is found by its whole key", "[lineage]") {
  TempDir dir;
  auto store = open_store(dir.path());
  const auto trunk = random_bytes(1024, 1);
  commit(*store, "base", "", kBase, {}, trunk);
  auto run = store->start_run(model_record("base", "", kBase),
                              {.kind = RunKind::kTest, .recipe_hash = kBase});
  REQUIRE(run.is_ok());
  TestOutcomeKey key{.kind = "test",
                     .name = "praise",
                     .model = "base",
                     .model_version = kBase,
                     .definition_digest = "d1",
                     .lexicon_digests = {{"noun", "n1"}},
                     .semantics_version = 1};
  REQUIRE(store->record_test_outcomes({{.key = key, .run = *run, .cases = 9, .failed = 2}}).is_ok());
  CHECK_FALSE(store->find_test_outcome(key)->has_value());  // its run is still running
  REQUIRE(store->finish_run(*run, RunStatus::kFinished, "", 9).is_ok());
  auto found = store->find_test_outcome(key);
  REQUIRE(found.is_ok());
  REQUIRE(found->has_value());
  CHECK((*found)->run == *run);
  CHECK((*found)->failed == 2);
  CHECK(store->runs("base", 0)->front().cases == 9);
  for (auto change : {+[](TestOutcomeKey& k) { k.model_version = kR1; },
                      +[](TestOutcomeKey& k) { k.definition_digest = "d2"; },
                      +[](TestOutcomeKey& k) { k.lexicon_digests["noun"] = "n2"; },
                      +[](TestOutcomeKey& k) { k.semantics_version = 2; }}) {
    TestOutcomeKey other = key;
    change(other);
    CHECK_FALSE(store->find_test_outcome(other)->has_value());
  }
}

// A store of schema version 3 (one parameter set per model) migrates to versions: each
// model's stored parameters become its current version, made by the newest finished run
// of that recipe, from the parent's version its run recorded.
TEST_CASE("a version-3 store migrates its parameters to versions", "[lineage]") {
  TempDir dir;
  const auto trunk = random_bytes(128 * 1024, 1), adapter = random_bytes(512, 2);
  std::int64_t adapt_run = 0;
  {
    auto store = open_store(dir.path());
    commit(*store, "base", "", kBase, {}, trunk);
    adapt_run = commit(*store, "a", "base", kR1, adapter, trunk);
    auto test = store->start_run(model_record("a", "base", kR1),
                                 {.kind = RunKind::kTest, .recipe_hash = kR1});
    REQUIRE(test.is_ok());
    REQUIRE(store->record_test_results({{.model = "a", .model_version = kR1, .run_id = *test,
                                         .test = "t", .case_index = 0},
                                        {.model = "a", .model_version = kR1, .run_id = *test,
                                         .test = "t", .case_index = 1}})
                .is_ok());
    REQUIRE(store->finish_run(*test, RunStatus::kFinished).is_ok());
    // Back to the version-3 schema, keeping the data.
    REQUIRE(store->db().exec("PRAGMA foreign_keys = OFF").is_ok());
    REQUIRE(store->db().exec(kDowngradeToVersion3).is_ok());
  }
  auto store = open_store(dir.path());
  CHECK(count(*store, "PRAGMA user_version") == kSchemaVersion);
  CHECK(count(*store, "SELECT count(*) FROM pragma_foreign_key_check") == 0);
  auto versions = store->versions("a");
  REQUIRE(versions.is_ok());
  REQUIRE(versions->size() == 1);
  CHECK((*versions)[0].current);
  CHECK((*versions)[0].run == adapt_run);
  CHECK((*versions)[0].parent_recipe_hash == kBase);
  CHECK(digest_of(*store, "a", "lora.a") == sha256_hex(adapter));
  CHECK(store->runs("a", 0)->front().cases == 2);  // the test run's cases, counted
  auto report = check_store(*store);
  REQUIRE(report.is_ok());
  for (const FsckFinding& p : report->problems) UNSCOPED_INFO(p.subject << ": " << p.message);
  CHECK(report->ok());
}
