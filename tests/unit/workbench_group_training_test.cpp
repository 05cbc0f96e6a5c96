// workbench/group_training.h over a real store, on the CPU backend a workbench::Context
// makes: a base trained and committed; a co-batched group of two LoRA children
// interrupted mid-way (runs marked interrupted, each job checkpointed through
// workbench/job_checkpoints.h) and then resumed to the end (checkpoints continued, then
// removed; runs finished; parameters stored).
#include <catch2/catch.hpp>
#include <cmath>
#include <map>

#include "lineage/store.h"
#include "lineage_test_support.h"
#include "spec_test_workspace.h"
#include "workbench/checkpoint_file.h"
#include "workbench/context.h"
#include "workbench/group_training.h"

using namespace scion;
using workbench::OutcomeStatus;

namespace {

constexpr const char* kChildren =
    "  a:\n"
    "    from: base\n"
    "    adapt: {lora: {rank: 2, targets: [q, v]}, head: {}}\n"
    "    train: {data: reviews, steps: 4, batch_size: 2, seed: 2}\n"
    "  a2:\n"
    "    from: base\n"
    "    adapt: {lora: {rank: 2, targets: [q]}, head: {}}\n"
    "    train: {data: reviews, steps: 4, batch_size: 2, seed: 3}\n";

// Records what training says; sets `interrupt` when a co-batched group reports step
// `interrupt_at` (0: never).
class RecordingObserver final : public workbench::TrainingObserver {
 public:
  void note(const std::string& message) override { notes.push_back(message); }
  void warning(const std::string& message) override { warnings.push_back(message); }
  void group_started(const std::vector<std::string>& models) override { started.push_back(models); }
  void resuming(const std::string& model, std::int64_t step) override {
    resumed.emplace_back(model, step);
  }
  void step(const runtime::StepReport& report, std::size_t group_size) override {
    ++steps;
    if (group_size > 1 && report.step == interrupt_at) interrupt = true;
  }

  std::atomic<bool> interrupt{false};
  std::int64_t interrupt_at = 0;
  int steps = 0;
  std::vector<std::string> notes, warnings;
  std::vector<std::vector<std::string>> started;
  std::vector<std::pair<std::string, std::int64_t>> resumed;
};

struct Fixture {
  spec::testing::TempWorkspace dir;
  spec::LoadResult loaded = dir.load(std::string(spec::testing::kPrefix) + kChildren);
  lineage::testing::TempDir store_dir;
  std::unique_ptr<lineage::LineageStore> store =
      lineage::LineageStore::open(store_dir.path()).value();
  runtime::SingleProcessCommunicator alone;
  workbench::Context context{alone, store.get(), {}};

  const spec::Workspace& ws() const { return *loaded.workspace; }

  // Trains `names` as one group; returns what stopped it.
  Status train(const std::vector<std::string>& names, lineage::RunKind kind,
               RecordingObserver& observer, workbench::TrainingOutcome& outcome,
               bool resume = false) {
    runtime::SharedModules shares(ws());
    workbench::TrainingDatasets datasets(ws());
    const workbench::GroupSetting setting{.ws = ws(),
                                          .store = *store,
                                          .shares = shares,
                                          .datasets = datasets,
                                          .observer = observer,
                                          .interrupted = &observer.interrupt,
                                          .comm = alone,
                                          .writer = true,
                                          .resume = resume,
                                          .quiet = true};
    std::vector<const spec::Model*> members;
    for (const std::string& name : names) members.push_back(ws().find_model(name));
    auto backend = context.backend(runtime::Precision::kF32);
    REQUIRE(backend.is_ok());
    return workbench::GroupTraining(setting, **backend, members, kind, outcome).run();
  }

  lineage::RunRecord newest_run(const std::string& model) {
    auto runs = store->runs(model, 1);
    REQUIRE(runs.is_ok());
    REQUIRE(runs->size() == 1);
    return runs->front();
  }
};

}  // namespace

TEST_CASE("a group trains, records and commits its models", "[workbench]") {
  Fixture f;
  INFO((f.loaded.errors.empty() ? "" : f.loaded.errors.front().to_string()));
  REQUIRE(f.loaded.workspace.has_value());
  RecordingObserver observer;
  workbench::TrainingOutcome outcome;
  REQUIRE(f.train({"base"}, lineage::RunKind::kTrain, observer, outcome).is_ok());

  REQUIRE(outcome.models.size() == 1);
  const workbench::ModelOutcome& base = outcome.models.front();
  CHECK(base.status == OutcomeStatus::kTrained);
  CHECK(base.steps == 10);
  CHECK(base.run_id > 0);
  CHECK(std::isfinite(base.final_loss));
  REQUIRE(outcome.groups.size() == 1);
  CHECK(outcome.groups[0].status == OutcomeStatus::kTrained);
  CHECK(outcome.groups[0].precision == "fp32");
  CHECK(outcome.groups[0].planned_bytes > 0);
  CHECK(observer.started == std::vector<std::vector<std::string>>{{"base"}});
  CHECK(observer.steps == 10);

  const lineage::RunRecord run = f.newest_run("base");
  CHECK(run.id == base.run_id);
  CHECK(run.status == lineage::RunStatus::kFinished);
  CHECK(run.kind == lineage::RunKind::kTrain);
  CHECK(f.store->run_metrics(run.id).value().size() == 10);
  CHECK_FALSE(f.store->load_parameters("base").value().empty());
  CHECK(f.context.check_backends("training").is_ok());
}

TEST_CASE("an interrupted group checkpoints its jobs and resumes them exactly there",
          "[workbench]") {
  Fixture f;
  REQUIRE(f.loaded.workspace.has_value());
  {
    RecordingObserver observer;
    workbench::TrainingOutcome outcome;
    REQUIRE(f.train({"base"}, lineage::RunKind::kTrain, observer, outcome).is_ok());
  }

  RecordingObserver interrupted;
  interrupted.interrupt_at = 2;
  workbench::TrainingOutcome first;
  const Status stopped = f.train({"a", "a2"}, lineage::RunKind::kAdapt, interrupted, first);
  CHECK(stopped.code() == StatusCode::kCancelled);
  REQUIRE(first.models.size() == 2);
  REQUIRE(first.groups.size() == 1);
  CHECK(first.groups[0].status == OutcomeStatus::kInterrupted);
  std::map<std::string, std::int64_t> checkpointed(first.checkpointed.begin(),
                                                   first.checkpointed.end());
  for (const workbench::ModelOutcome& m : first.models) {
    INFO(m.name);
    CHECK(m.status == OutcomeStatus::kInterrupted);
    CHECK(f.newest_run(m.name).status == lineage::RunStatus::kInterrupted);
    CHECK(f.newest_run(m.name).kind == lineage::RunKind::kAdapt);
    const spec::Model& model = *f.ws().find_model(m.name);
    CHECK(workbench::has_checkpoint(f.store->env(), f.store->dir(), model.recipe_hash));
    REQUIRE(checkpointed.count(m.name) == 1);
    CHECK(checkpointed[m.name] == m.steps);
    CHECK(m.steps >= 2);
    CHECK(m.steps < 4);
  }
  const auto nothing_stored = f.store->load_parameters("a");
  CHECK((!nothing_stored.is_ok() || nothing_stored->empty()));

  RecordingObserver resumed;
  workbench::TrainingOutcome second;
  REQUIRE(f.train({"a", "a2"}, lineage::RunKind::kAdapt, resumed, second, /*resume=*/true).is_ok());
  REQUIRE(second.models.size() == 2);
  CHECK(resumed.resumed.size() == 2);
  for (const workbench::ModelOutcome& m : second.models) {
    INFO(m.name);
    CHECK(m.status == OutcomeStatus::kTrained);
    CHECK(m.resumed_from == checkpointed[m.name]);
    CHECK(m.steps == 4);
    CHECK(f.newest_run(m.name).status == lineage::RunStatus::kFinished);
    const spec::Model& model = *f.ws().find_model(m.name);
    CHECK_FALSE(workbench::has_checkpoint(f.store->env(), f.store->dir(), model.recipe_hash));
    CHECK_FALSE(f.store->load_parameters(m.name).value().empty());
  }
}
