// workbench::training_status (what a training command ends with), the outcome statuses'
// one name each and a model outcome's one JSON form (workbench/training_outcome.h),
// open_store_on_ranks (rank 0 opens the store for writing, the other ranks read-only) and
// parallelism_on_hosts (task parallelism only on one machine).
#include <catch2/catch.hpp>

#include "lineage/store.h"
#include "lineage_test_support.h"
#include "workbench/rank_hosts.h"
#include "workbench/rank_store.h"
#include "workbench/training.h"

using namespace scion;

namespace {

// Rank `rank` of two; agree() returns this rank's own status (the peer is always ok).
class RankOf2 final : public runtime::Communicator {
 public:
  explicit RankOf2(int rank) : rank_(rank) {}
  int rank() const override { return rank_; }
  int size() const override { return 2; }
  Status all_reduce_sum(std::span<float>) override { return Status::ok(); }
  Status all_reduce_sum(std::span<double>) override { return Status::ok(); }
  Status agree(const Status& local) override { return local; }
  // Opening the store gathers nothing.
  Result<std::vector<std::string>> gather(std::string_view) override {
    return Status(StatusCode::kInternal, "RankOf2 cannot gather");
  }
  Result<std::vector<std::string>> all_gather(std::string_view) override {
    return Status(StatusCode::kInternal, "RankOf2 cannot gather");
  }

 private:
  int rank_;
};

}  // namespace

TEST_CASE("a training command ends with its status or its last divergence", "[workbench]") {
  workbench::TrainingOutcome outcome;
  CHECK(workbench::training_status(outcome).is_ok());
  outcome.diverged = {"'a' diverged at step 3", "'b' diverged at step 5"};
  const Status diverged = workbench::training_status(outcome);
  CHECK(diverged.code() == StatusCode::kDiverged);
  CHECK(diverged.message() == "'b' diverged at step 5");
  outcome.status = Status(StatusCode::kCancelled, "interrupted");
  CHECK(workbench::training_status(outcome).code() == StatusCode::kCancelled);
}

TEST_CASE("rank 0 opens the store for writing, the others to read", "[workbench]") {
  lineage::testing::TempDir dir;
  std::vector<std::string> calls;
  auto writing = [&]() -> Result<std::unique_ptr<lineage::LineageStore>> {
    calls.push_back("write");
    return lineage::LineageStore::open(dir.path());
  };
  auto reading = [&]() -> Result<std::unique_ptr<lineage::LineageStore>> {
    calls.push_back("read");
    return lineage::LineageStore::open(dir.path());
  };
  runtime::SingleProcessCommunicator one;
  CHECK(workbench::open_store_on_ranks(one, writing, reading).is_ok());
  CHECK(calls == std::vector<std::string>{"write"});
  calls.clear();
  RankOf2 second(1);
  CHECK(workbench::open_store_on_ranks(second, writing, reading).is_ok());
  CHECK(calls == std::vector<std::string>{"read"});
  auto broken = []() -> Result<std::unique_ptr<lineage::LineageStore>> {
    return Status(StatusCode::kIoError, "cannot open");
  };
  CHECK(workbench::open_store_on_ranks(one, broken, reading).status().code() ==
        StatusCode::kIoError);
}

TEST_CASE("task parallelism, where every rank writes the store, stays on one machine",
          "[workbench]") {
  using workbench::Parallelism;
  const std::vector<std::string> one = {"node1", "node1", "node1"};
  for (Parallelism p : {Parallelism::kAuto, Parallelism::kData, Parallelism::kTask})
    CHECK(workbench::parallelism_on_hosts(p, one).value() == p);
  const std::vector<std::string> two = {"node1", "node1", "node2"};
  CHECK(workbench::parallelism_on_hosts(Parallelism::kAuto, two).value() == Parallelism::kData);
  CHECK(workbench::parallelism_on_hosts(Parallelism::kData, two).value() == Parallelism::kData);
  const auto refused = workbench::parallelism_on_hosts(Parallelism::kTask, two);
  REQUIRE_FALSE(refused.is_ok());
  CHECK(refused.status().code() == StatusCode::kInvalidArgument);
  CHECK_THAT(refused.status().message(),
             Catch::Contains("2 machines (ranks 0,1 on node1; rank 2 on node2)") &&
                 Catch::Contains("--parallel data"));
}

TEST_CASE("each outcome status has one name, read back from its words", "[workbench]") {
  using workbench::OutcomeStatus;
  for (OutcomeStatus status :
       {OutcomeStatus::kUpToDate, OutcomeStatus::kImported, OutcomeStatus::kRestored,
        OutcomeStatus::kRunning, OutcomeStatus::kTrained, OutcomeStatus::kInterrupted,
        OutcomeStatus::kFailed, OutcomeStatus::kDiverged, OutcomeStatus::kNotTrained}) {
    const std::string_view name = workbench::outcome_status_name(status);
    INFO(name);
    CHECK(workbench::outcome_status_from_name(name) == status);
  }
  CHECK(workbench::outcome_status_name(OutcomeStatus::kUpToDate) == "up to date");
  CHECK(workbench::outcome_status_from_name("not trained: 'hot' diverged") ==
        OutcomeStatus::kNotTrained);
  CHECK_FALSE(workbench::outcome_status_from_name("trainedx").has_value());
  CHECK_FALSE(workbench::outcome_status_from_name("").has_value());
}

TEST_CASE("a model's outcome has one JSON form, read back whole", "[workbench]") {
  using workbench::OutcomeStatus;
  workbench::ModelOutcome blocked("child", OutcomeStatus::kNotTrained);
  blocked.blocked_by = "hot";
  const nlohmann::json blocked_json = workbench::model_outcome_json(blocked);
  CHECK(blocked_json == nlohmann::json{{"model", "child"},
                                       {"status", "not trained: 'hot' diverged"},
                                       {"blocked_by", "hot"},
                                       {"validation", nlohmann::json::object()},
                                       {"kept", nullptr}});

  workbench::ModelOutcome trained("lora", OutcomeStatus::kTrained, 7);
  trained.steps = 30;
  trained.resumed_from = 10;
  trained.final_loss = 0.5;
  trained.seconds = 1.25;
  trained.val_accuracy = 0.75;
  trained.validation = {{"val_accuracy", 0.75}, {"val_f1", 0.5}, {"val_loss", 0.625}};
  trained.kept = runtime::KeptValidation{
      .step = 20, .metric = "val_f1", .value = 0.5, .last_step = 30, .last_value = 0.25};
  const nlohmann::json json = workbench::model_outcome_json(trained);
  CHECK(json == nlohmann::json{
                    {"model", "lora"},
                    {"status", "trained"},
                    {"run", 7},
                    {"steps", 30},
                    {"resumed_from", 10},
                    {"final_loss", 0.5},
                    {"seconds", 1.25},
                    {"val_accuracy", 0.75},
                    {"validation", {{"val_accuracy", 0.75}, {"val_f1", 0.5}, {"val_loss", 0.625}}},
                    {"kept",
                     {{"step", 20},
                      {"metric", "val_f1"},
                      {"value", 0.5},
                      {"last_step", 30},
                      {"last_value", 0.25}}}});
  CHECK(workbench::kept_message(*trained.kept) ==
        "kept step 20 of 30: the best val_f1 (0.5; the last validation had 0.25)");
  auto back = workbench::model_outcome_from_json(json);
  REQUIRE(back.is_ok());
  CHECK(workbench::model_outcome_json(*back) == json);
  CHECK(workbench::model_outcome_json(workbench::model_outcome_from_json(blocked_json).value()) ==
        blocked_json);
  CHECK(workbench::model_outcome_from_json({{"model", "x"}, {"status", "exploded"}})
            .status()
            .code() == StatusCode::kCorruption);
  CHECK(workbench::model_outcome_from_json({{"status", "trained"}}).status().code() ==
        StatusCode::kCorruption);
  nlohmann::json bad_kept = json;
  bad_kept["kept"].erase("metric");
  CHECK(workbench::model_outcome_from_json(bad_kept).status().code() == StatusCode::kCorruption);
}
