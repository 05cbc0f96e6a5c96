// The lineage store: schema identity, round trips of parameters (inline and file
// objects), dedup, runs and metrics, results, lineage queries.
#include <sqlite3.h>

#include <catch2/catch.hpp>

#include "lineage/digest.h"
#include "lineage/object_store.h"
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

}  // namespace

TEST_CASE("a new store identifies itself and turns on its pragmas", "[lineage]") {
  TempDir dir;
  auto store = open_store(dir.path() / ".scion");
  CHECK(count(*store, "PRAGMA application_id") == kApplicationId);
  CHECK(count(*store, "PRAGMA user_version") == kSchemaVersion);
  CHECK(count(*store, "PRAGMA foreign_keys") == 1);
  auto mode = store->db().prepare("PRAGMA journal_mode");
  REQUIRE(mode.is_ok());
  REQUIRE(*mode->step());
  CHECK(mode->column_text(0) == "wal");
  CHECK(std::filesystem::is_directory(dir.path() / ".scion" / "objects"));
  // Tables are STRICT: a text in an INTEGER column is refused.
  CHECK_FALSE(store->db()
                  .exec("INSERT INTO datasets VALUES ('" + std::string(64, 'b') +
                        "', 'x', 'many', 'jsonl')")
                  .is_ok());
}

// A store of schema version 1, before runs could end 'diverged' or 'abandoned', is
// migrated when opened: its runs and their metrics stay, and the new statuses are allowed.
TEST_CASE("a version-1 store migrates to the current version keeping its runs", "[lineage]") {
  TempDir dir;
  {
    auto store = open_store(dir.path() / ".scion");
    SqliteDb& db = store->db();
    REQUIRE(db.exec("PRAGMA foreign_keys = OFF").is_ok());
    REQUIRE(db.exec(kDowngradeToVersion3).is_ok());
    REQUIRE(db.exec(R"sql(
DROP TABLE eval_results;
DROP TABLE runs;
CREATE TABLE runs (
  id INTEGER PRIMARY KEY, model_id INTEGER NOT NULL REFERENCES models(id),
  kind TEXT NOT NULL CHECK (kind IN ('train', 'adapt', 'test', 'import')),
  status TEXT NOT NULL CHECK (status IN ('running', 'finished', 'failed', 'interrupted')),
  recipe_hash TEXT NOT NULL, dataset_digest TEXT REFERENCES datasets(digest),
  started_at TEXT NOT NULL, finished_at TEXT, seed INTEGER NOT NULL, host TEXT NOT NULL,
  scion_version TEXT NOT NULL,
  hyperparameters TEXT NOT NULL DEFAULT '{}' CHECK (json_valid(hyperparameters)),
  message TEXT NOT NULL DEFAULT '') STRICT;
INSERT INTO models (id, name, created_at, updated_at) VALUES (1, 'm', 'now', 'now');
INSERT INTO runs (id, model_id, kind, status, recipe_hash, started_at, finished_at, seed, host,
                  scion_version)
  VALUES (7, 1, 'train', 'finished', 'abc', '2026-01-01T00:00:00Z', '2026-01-01T00:00:01Z', 1,
          'h', '0.1');
INSERT INTO run_metrics (run_id, step, loss) VALUES (7, 1, 0.5), (7, 2, 0.25);
PRAGMA user_version = 1;
)sql")
                .is_ok());
  }
  auto store = open_store(dir.path() / ".scion");
  CHECK(count(*store, "PRAGMA user_version") == kSchemaVersion);
  CHECK(count(*store, "SELECT count(*) FROM eval_results") == 0);
  CHECK(count(*store, "PRAGMA foreign_keys") == 1);
  CHECK(count(*store, "SELECT count(*) FROM run_metrics WHERE run_id = 7") == 2);
  CHECK(count(*store, "SELECT count(*) FROM runs WHERE id = 7 AND status = 'finished'") == 1);
  CHECK(count(*store, "SELECT count(*) FROM pragma_foreign_key_check") == 0);
  CHECK(store->db().exec("UPDATE runs SET status = 'diverged' WHERE id = 7").is_ok());
  CHECK_FALSE(store->db().exec("UPDATE runs SET status = 'lost' WHERE id = 7").is_ok());
  // The metrics still belong to the rebuilt table: deleting the run cascades to them.
  REQUIRE(store->db().exec("DELETE FROM runs WHERE id = 7").is_ok());
  CHECK(count(*store, "SELECT count(*) FROM run_metrics") == 0);
}

// Version 3 adds eval_results; a result is kept against the model version it scored.
TEST_CASE("eval results are recorded and read back by model version", "[lineage]") {
  TempDir dir;
  auto store = open_store(dir.path() / ".scion");
  ModelRecord model{.name = "m", .recipe_hash = "v1"};
  auto run = store->start_run(model, RunStart{.kind = RunKind::kImport, .recipe_hash = "v1"});
  REQUIRE(run.is_ok());
  EvalResult r{.model = "m",
               .model_version = "v1",
               .dataset = "held-out.jsonl",
               .dataset_digest = std::string(64, 'a'),
               .rows = 7,
               .kind = "classifier",
               .metrics = {{"accuracy", 0.5}}};
  REQUIRE(store->record_eval_results({r}).is_ok());
  r.model_version = "v2";
  r.metrics["accuracy"] = 0.75;
  REQUIRE(store->record_eval_results({r}).is_ok());
  auto all = store->eval_results("m", "");
  REQUIRE(all.is_ok());
  REQUIRE(all->size() == 2);
  CHECK((*all)[0].model_version == "v2");  // newest first
  CHECK((*all)[1].metrics["accuracy"] == 0.5);
  CHECK((*all)[1].rows == 7);
  CHECK_FALSE((*all)[1].evaluated_at.empty());
  auto v1 = store->eval_results("m", "v1");
  REQUIRE(v1.is_ok());
  CHECK(v1->size() == 1);
  r.dataset_digest = "short";
  CHECK_FALSE(store->record_eval_results({r}).is_ok());  // the CHECK on the digest
}

TEST_CASE("opening without create reports a missing store clearly", "[lineage]") {
  TempDir dir;
  StoreOptions options;
  options.create = false;
  auto store = LineageStore::open(dir.path() / "nothing", options);
  REQUIRE_FALSE(store.is_ok());
  CHECK(store.status().code() == StatusCode::kNotFound);
  CHECK(store.status().message().find("no scion store") != std::string::npos);
}

TEST_CASE("parameters round-trip, small ones inline and large ones as files", "[lineage]") {
  TempDir dir;
  auto store = open_store(dir.path());
  const auto small = random_bytes(1024, 1);
  const auto large = random_bytes(256 * 1024, 2);
  auto run =
      store->start_run(model_record("trunk"), {RunKind::kImport, std::string(64, 'a'), {}, 7, {}});
  REQUIRE(run.is_ok());
  REQUIRE(store
              ->commit_model(*run, model_record("trunk"),
                             {f32_parameter("ln.bias", small, "trunk"),
                              f32_parameter("tok_emb.weight", large, "trunk")})
              .is_ok());

  auto loaded = store->load_parameters("trunk");
  REQUIRE(loaded.is_ok());
  REQUIRE(loaded->size() == 2);
  const LoadedParameter& emb = loaded->at("tok_emb.weight");
  CHECK(emb.shape == std::vector<std::int64_t>{64 * 1024});
  CHECK(std::equal(emb.bytes.begin(), emb.bytes.end(), large.begin(), large.end()));
  CHECK(emb.digest == sha256_hex(large));
  const LoadedParameter& bias = loaded->at("ln.bias");
  CHECK(std::equal(bias.bytes.begin(), bias.bytes.end(), small.begin(), small.end()));

  CHECK(count(*store, "SELECT count(*) FROM objects WHERE inline_bytes IS NOT NULL") == 1);
  CHECK(std::filesystem::file_size(store->objects().path_for(sha256_hex(large))) == large.size());
  auto runs = store->runs("trunk", 0);
  REQUIRE(runs.is_ok());
  REQUIRE(runs->size() == 1);
  CHECK(runs->front().status == RunStatus::kFinished);
  CHECK(runs->front().kind == RunKind::kImport);
}

TEST_CASE("identical tensors are stored once and descendants share them", "[lineage]") {
  TempDir dir;
  auto store = open_store(dir.path());
  const auto trunk = random_bytes(128 * 1024, 3);
  const auto adapter_a = random_bytes(512, 4);
  const auto adapter_b = random_bytes(512, 5);
  auto commit = [&](const std::string& name, const std::string& parent,
                    std::vector<ParameterWrite> ps) {
    auto run = store->start_run(model_record(name, parent),
                                {RunKind::kAdapt, std::string(64, 'a'), {}, 0, {}});
    REQUIRE(run.is_ok());
    REQUIRE(store->commit_model(*run, model_record(name, parent), ps).is_ok());
  };
  commit("base", "", {f32_parameter("w", trunk, "base")});
  commit("a", "base",
         {f32_parameter("w", trunk, "base", false), f32_parameter("lora.a", adapter_a, "a")});
  commit("b", "base",
         {f32_parameter("w", trunk, "base", false), f32_parameter("lora.b", adapter_b, "b")});

  CHECK(count(*store, "SELECT count(*) FROM objects") == 3);
  auto listing = store->objects().list();
  REQUIRE(listing.is_ok());
  CHECK(listing->digests.size() == 1);

  auto models = store->models();
  REQUIRE(models.is_ok());
  REQUIRE(models->size() == 3);
  CHECK(models->at(0).name == "base");  // parents first
  CHECK(models->at(1).parent == "base");
  CHECK(models->at(1).shared_with_parent == 1);
  CHECK(models->at(1).own_count == 1);
  auto shared = store->sharing("a");
  REQUIRE(shared.is_ok());
  CHECK(shared->at("base") == 1);
  CHECK(shared->at("b") == 1);
}

TEST_CASE("a descendant whose parent is not stored is refused with a clear error", "[lineage]") {
  TempDir dir;
  auto store = open_store(dir.path());
  auto run = store->start_run(model_record("child", "missing"), {});
  REQUIRE_FALSE(run.is_ok());
  CHECK(run.status().message().find("parent 'missing' is not in the store") != std::string::npos);
}

TEST_CASE("runs record metrics, end states and order newest first", "[lineage]") {
  TempDir dir;
  auto store = open_store(dir.path());
  const std::string data_digest = sha256_hex(random_bytes(10, 6));
  REQUIRE(store->record_dataset({data_digest, "data/train.jsonl", 100, "jsonl"}).is_ok());
  auto first = store->start_run(
      model_record("m"), {RunKind::kTrain, std::string(64, 'c'), data_digest, 1, {{"lr", 0.01}}});
  REQUIRE(first.is_ok());
  REQUIRE(store->append_metrics(*first, {1, 2.5, 0.01, {}}).is_ok());
  REQUIRE(store->append_metrics(*first, {2, 1.5, 0.01, {{"val_loss", 1.7}}}).is_ok());
  REQUIRE(store->finish_run(*first, RunStatus::kInterrupted, "stopped by Ctrl-C").is_ok());
  auto second = store->start_run(model_record("m"),
                                 {RunKind::kTrain, std::string(64, 'c'), data_digest, 1, {}});
  REQUIRE(second.is_ok());
  REQUIRE(store->finish_run(*second, RunStatus::kFailed, "diverged").is_ok());

  auto runs = store->runs("", 0);
  REQUIRE(runs.is_ok());
  REQUIRE(runs->size() == 2);
  CHECK(runs->at(0).id == *second);
  CHECK(runs->at(0).status == RunStatus::kFailed);
  CHECK(runs->at(1).status == RunStatus::kInterrupted);
  CHECK(runs->at(1).steps == 2);
  REQUIRE(runs->at(1).final_loss);
  CHECK(*runs->at(1).final_loss == Approx(1.5));
  CHECK(runs->at(1).hyperparameters["lr"] == 0.01);
  auto metrics = store->run_metrics(*first);
  REQUIRE(metrics.is_ok());
  CHECK(metrics->at(1).validation.at("val_loss") == Approx(1.7));
  auto datasets = store->datasets_of("m");
  REQUIRE(datasets.is_ok());
  REQUIRE(datasets->size() == 1);
  CHECK(datasets->front().rows == 100);
  CHECK(store->append_metrics(9999, {1, 1.0, {}, {}}).code() == StatusCode::kNotFound);
  CHECK(store->finish_run(9999, RunStatus::kFailed).code() == StatusCode::kNotFound);
}

TEST_CASE("a resumed run's step count is the step it reached, not the steps it ran", "[lineage]") {
  TempDir dir;
  auto store = open_store(dir.path());
  auto run =
      store->start_run(model_record("m"), {RunKind::kTrain, std::string(64, 'c'), {}, 1, {}});
  REQUIRE(run.is_ok());
  // Resumed from a checkpoint at step 76: its metrics start at step 77.
  for (std::int64_t step = 77; step <= 80; ++step)
    REQUIRE(store->append_metrics(*run, {step, 1.0, 0.01, {}}).is_ok());
  auto runs = store->runs("m", 0);
  REQUIRE(runs.is_ok());
  REQUIRE(runs->size() == 1);
  CHECK(runs->front().steps == 80);
}

TEST_CASE("several steps' metrics are appended in one transaction, all or none", "[lineage]") {
  TempDir dir;
  auto store = open_store(dir.path());
  auto run =
      store->start_run(model_record("m"), {RunKind::kTrain, std::string(64, 'c'), {}, 1, {}});
  REQUIRE(run.is_ok());
  const std::vector<StepMetrics> steps = {
      {1, 3.0, 0.01, {}}, {2, 2.0, 0.01, {}}, {3, 1.0, 0.01, {{"val_loss", 1.2}}}};
  REQUIRE(store->append_metrics(*run, steps).is_ok());
  REQUIRE(store->append_metrics(*run, std::span<const StepMetrics>()).is_ok());
  auto metrics = store->run_metrics(*run);
  REQUIRE(metrics.is_ok());
  REQUIRE(metrics->size() == 3);
  CHECK(*metrics->at(2).loss == Approx(1.0));
  CHECK(metrics->at(2).validation.at("val_loss") == Approx(1.2));
  // A batch for a run the store does not have writes nothing.
  CHECK(store->append_metrics(9999, steps).code() == StatusCode::kNotFound);
  auto runs = store->runs("m", 0);
  REQUIRE(runs.is_ok());
  CHECK(runs->front().steps == 3);
}

TEST_CASE("test-case results and assertion violations are kept per model version", "[lineage]") {
  TempDir dir;
  auto store = open_store(dir.path());
  REQUIRE(store->start_run(model_record("m"), {}).is_ok());
  const std::string v1(64, '1'), v2(64, '2');
  REQUIRE(store
              ->record_test_results(
                  {{"m", v1, {}, "negation", 0, "not good", "negative", "negative", true},
                   {"m", v1, {}, "negation", 1, "not bad", "positive", "negative", false},
                   {"m", v2, {}, "negation", 0, "not good", "negative", "negative", true}})
              .is_ok());
  REQUIRE(
      store->record_assertion_violations({{"m", v2, {}, "low_confidence", "meh", {{"p", 0.51}}}})
          .is_ok());
  auto v1_results = store->test_results("m", v1);
  REQUIRE(v1_results.is_ok());
  REQUIRE(v1_results->size() == 2);
  CHECK_FALSE(v1_results->at(1).passed);
  auto all = store->test_results("m", "");
  REQUIRE(all.is_ok());
  CHECK(all->size() == 3);
  auto violations = store->assertion_violations("m", v2);
  REQUIRE(violations.is_ok());
  REQUIRE(violations->size() == 1);
  CHECK(violations->front().detail["p"] == 0.51);
  CHECK(store->record_test_results({{"nobody", v1, {}, "t", 0, "", "", "", true}}).code() ==
        StatusCode::kNotFound);
}

TEST_CASE("a parameter whose bytes disagree with its shape is refused", "[lineage]") {
  TempDir dir;
  auto store = open_store(dir.path());
  auto run = store->start_run(model_record("m"), {});
  REQUIRE(run.is_ok());
  const auto bytes = random_bytes(12, 7);
  ParameterWrite p = f32_parameter("w", bytes, "m");
  p.shape = {4};
  Status status = store->commit_model(*run, model_record("m"), {p});
  CHECK(status.code() == StatusCode::kInvalidArgument);
  CHECK(status.message().find("'w'") != std::string::npos);
}
