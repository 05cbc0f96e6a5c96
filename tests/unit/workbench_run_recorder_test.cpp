// workbench/run_recorder.h against a real store: a run started with its recipe, step
// metrics buffered and appended kMetricsEvery at a time (or at once after a checkpoint,
// or when flushed), a run finished as it ended, and a rank that does not write leaving
// the store untouched.
#include <catch2/catch.hpp>

#include "lineage/store.h"
#include "lineage_test_support.h"
#include "spec_test_workspace.h"
#include "workbench/run_recorder.h"

using namespace scion;

namespace {

lineage::StepMetrics step(std::int64_t n) {
  lineage::StepMetrics metrics;
  metrics.step = n;
  metrics.loss = 1.0 / static_cast<double>(n);
  return metrics;
}

struct Fixture {
  spec::testing::TempWorkspace dir;
  spec::LoadResult loaded = dir.load(spec::testing::kPrefix);
  lineage::testing::TempDir store_dir;
  std::unique_ptr<lineage::LineageStore> store =
      lineage::LineageStore::open(store_dir.path()).value();

  const spec::Workspace& ws() const { return *loaded.workspace; }
  const spec::Model& base() const { return *ws().find_model("base"); }
  std::size_t metrics_of(std::int64_t run) { return store->run_metrics(run).value().size(); }
};

}  // namespace

TEST_CASE("a run recorder starts runs, batches their metrics and finishes them", "[workbench]") {
  Fixture f;
  REQUIRE(f.loaded.workspace.has_value());
  workbench::RunRecorder recorder(*f.store, f.ws(), /*writer=*/true);
  const std::string corpus = f.ws().find_dataset("corpus")->digest;
  REQUIRE(recorder.record_dataset({corpus, "corpus.txt", 2, "text"}).is_ok());
  auto run = recorder.start(f.base(), lineage::RunKind::kTrain);
  REQUIRE(run.is_ok());
  REQUIRE(*run > 0);
  const auto datasets = f.store->datasets_of("base");
  REQUIRE(datasets.is_ok());
  REQUIRE(datasets->size() == 1);
  CHECK(datasets->front().digest == corpus);
  CHECK(datasets->front().rows == 2);
  auto runs = f.store->runs("base", 0);
  REQUIRE(runs.is_ok());
  REQUIRE(runs->size() == 1);
  CHECK(runs->front().recipe_hash == f.base().recipe_hash);
  CHECK(runs->front().status == lineage::RunStatus::kRunning);
  CHECK(runs->front().dataset_digest == corpus);

  // Buffered until kMetricsEvery steps, then appended in one go.
  const auto every = static_cast<std::int64_t>(workbench::RunRecorder::kMetricsEvery);
  for (std::int64_t n = 1; n < every; ++n)
    REQUIRE(recorder.record_step(*run, step(n), /*flush_now=*/false).is_ok());
  CHECK(f.metrics_of(*run) == 0);
  REQUIRE(recorder.record_step(*run, step(every), false).is_ok());
  CHECK(f.metrics_of(*run) == static_cast<std::size_t>(every));

  // A checkpoint's step goes in at once; flush appends the rest, and twice is harmless.
  REQUIRE(recorder.record_step(*run, step(every + 1), /*flush_now=*/true).is_ok());
  CHECK(f.metrics_of(*run) == static_cast<std::size_t>(every + 1));
  REQUIRE(recorder.record_step(*run, step(every + 2), false).is_ok());
  CHECK(f.metrics_of(*run) == static_cast<std::size_t>(every + 1));
  REQUIRE(recorder.flush(*run).is_ok());
  REQUIRE(recorder.flush(*run).is_ok());
  const auto metrics = f.store->run_metrics(*run);
  REQUIRE(metrics.is_ok());
  REQUIRE(metrics->size() == static_cast<std::size_t>(every + 2));
  CHECK(metrics->back().step == every + 2);

  REQUIRE(recorder.finish(*run, lineage::RunStatus::kInterrupted, "interrupted").is_ok());
  runs = f.store->runs("base", 0);
  REQUIRE(runs.is_ok());
  CHECK(runs->front().status == lineage::RunStatus::kInterrupted);
  CHECK(runs->front().message == "interrupted");
  CHECK(runs->front().steps == every + 2);
}

TEST_CASE("a run recorder on a rank that does not write records nothing", "[workbench]") {
  Fixture f;
  REQUIRE(f.loaded.workspace.has_value());
  workbench::RunRecorder recorder(*f.store, f.ws(), /*writer=*/false);
  auto run = recorder.start(f.base(), lineage::RunKind::kTrain);
  REQUIRE(run.is_ok());
  CHECK(*run == 0);
  CHECK(recorder.record_step(0, step(1), /*flush_now=*/true).is_ok());
  CHECK(recorder.flush(0).is_ok());
  CHECK(recorder.finish(0, lineage::RunStatus::kFailed, "failed").is_ok());
  CHECK(recorder.record_dataset({f.ws().find_dataset("corpus")->digest, "corpus.txt", 2, "text"})
            .is_ok());
  CHECK(f.store->runs("", 0).value().empty());
  const auto datasets = f.store->datasets_of("base");  // no such model in the store either
  CHECK((!datasets.is_ok() || datasets->empty()));
}
