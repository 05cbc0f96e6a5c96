// workbench/wave_scheduler.h: which groups each rank trains, wave by wave, over a plan made
// against a real store; and the outcomes the ranks exchange after a task-parallel wave,
// read back exactly (a NaN loss included).
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <limits>

#include "lineage/store.h"
#include "lineage_test_support.h"
#include "spec_test_workspace.h"
#include "workbench/plan.h"
#include "workbench/wave_scheduler.h"

using namespace scion;
using workbench::OutcomeStatus;
using workbench::Parallelism;

namespace {

// Two trunks, each with a LoRA child: wave 0 trains the bases, wave 1 the children.
constexpr const char* kTwoTrunks =
    "  other:\n"
    "    architecture: {layers: 2, width: 16, heads: 4, max_length: 32}\n"
    "    train: {data: corpus, steps: 10}\n"
    "  a:\n"
    "    from: base\n"
    "    adapt: {lora: {rank: 2, targets: [q, v]}, head: {}}\n"
    "    train: {data: reviews, steps: 4}\n"
    "  b:\n"
    "    from: other\n"
    "    adapt: {lora: {rank: 2, targets: [q, v]}, head: {}}\n"
    "    train: {data: reviews, steps: 4}\n";

// Rank `rank` of `size`; all_gather answers this rank's message and `others`, in rank
// order, and keeps what this rank sent.
class FakeRanks final : public runtime::Communicator {
 public:
  FakeRanks(int rank, int size) : rank_(rank), size_(size) {}
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  Status all_reduce_sum(std::span<float>) override { return Status::ok(); }
  Status all_reduce_sum(std::span<double>) override { return Status::ok(); }
  Status agree(const Status& local) override { return local; }
  Result<std::vector<std::string>> gather(std::string_view local) override {
    return all_gather(local);
  }
  Result<std::vector<std::string>> all_gather(std::string_view local) override {
    sent = std::string(local);
    std::vector<std::string> all = others;
    all.insert(all.begin() + rank_, sent);
    return all;
  }

  std::vector<std::string> others;
  std::string sent;

 private:
  int rank_, size_;
};

std::vector<std::vector<std::string>> models_of(const workbench::Plan& plan,
                                                const std::vector<std::size_t>& groups) {
  std::vector<std::vector<std::string>> out;
  for (std::size_t g : groups) out.push_back(plan.groups[g].models);
  return out;
}

}  // namespace

TEST_CASE("the wave scheduler gives each rank its groups, wave by wave", "[workbench]") {
  spec::testing::TempWorkspace dir;
  const spec::LoadResult loaded = dir.load(std::string(spec::testing::kPrefix) + kTwoTrunks);
  INFO((loaded.errors.empty() ? "" : loaded.errors.front().to_string()));
  REQUIRE(loaded.workspace.has_value());
  lineage::testing::TempDir store_dir;
  auto store = lineage::LineageStore::open(store_dir.path());
  REQUIRE(store.is_ok());
  auto plan = workbench::make_plan(*loaded.workspace, store->get(), {});
  REQUIRE(plan.is_ok());

  SECTION("one process trains every group of every wave, data parallel") {
    const workbench::WaveScheduler alone(*plan, Parallelism::kTask, 1, 0);
    REQUIRE(alone.waves() == 2);
    for (std::size_t wave : {0u, 1u}) {
      CHECK_FALSE(alone.task_parallel(wave));
      CHECK(alone.writes(wave));
    }
    CHECK(models_of(*plan, alone.groups_of(0)) ==
          std::vector<std::vector<std::string>>{{"base"}, {"other"}});
    CHECK(models_of(*plan, alone.groups_of(1)) ==
          std::vector<std::vector<std::string>>{{"a"}, {"b"}});
  }
  SECTION("two ranks share a wave of two trunks by trunk, each writing its own") {
    const workbench::WaveScheduler first(*plan, Parallelism::kAuto, 2, 0);
    const workbench::WaveScheduler second(*plan, Parallelism::kAuto, 2, 1);
    for (std::size_t wave : {0u, 1u}) {
      CHECK(first.task_parallel(wave));
      CHECK(second.writes(wave));
      std::vector<std::vector<std::string>> both = models_of(*plan, first.groups_of(wave));
      const auto theirs = models_of(*plan, second.groups_of(wave));
      CHECK(both.size() == 1);
      CHECK(theirs.size() == 1);
      both.insert(both.end(), theirs.begin(), theirs.end());
      std::sort(both.begin(), both.end());
      CHECK(both == (wave == 0 ? std::vector<std::vector<std::string>>{{"base"}, {"other"}}
                               : std::vector<std::vector<std::string>>{{"a"}, {"b"}}));
    }
    // A trunk's groups stay on one rank from wave to wave.
    const auto wave0 = models_of(*plan, first.groups_of(0)).front().front();
    const auto wave1 = models_of(*plan, first.groups_of(1)).front().front();
    CHECK((wave0 == "base" ? wave1 == "a" : wave1 == "b"));
  }
  SECTION("data parallel: every rank trains every group, rank 0 alone writes") {
    const workbench::WaveScheduler first(*plan, Parallelism::kData, 2, 0);
    const workbench::WaveScheduler second(*plan, Parallelism::kData, 2, 1);
    CHECK_FALSE(first.task_parallel(0));
    CHECK(first.writes(0));
    CHECK_FALSE(second.writes(0));
    CHECK(second.groups_of(1) == first.groups_of(1));
    CHECK(second.groups_of(1).size() == 2);
  }
}

TEST_CASE("after a task-parallel wave every rank holds every rank's outcomes", "[workbench]") {
  // What rank 1 trained in the wave: one model diverged (its loss NaN), one below it not
  // trained, one group failed.
  workbench::TrainingOutcome theirs;
  theirs.models.emplace_back("earlier", OutcomeStatus::kUpToDate);
  const workbench::OutcomeMark theirs_before = workbench::mark_of(theirs);
  workbench::ModelOutcome diverged("b", OutcomeStatus::kDiverged, 12);
  diverged.steps = 3;
  diverged.final_loss = std::numeric_limits<double>::quiet_NaN();
  diverged.val_loss = 0.5;
  theirs.models.push_back(diverged);
  workbench::ModelOutcome blocked("b2", OutcomeStatus::kNotTrained);
  blocked.blocked_by = "b";
  theirs.models.push_back(blocked);
  theirs.groups.push_back({{"b"}, OutcomeStatus::kFailed, 1.5, 100, "bf16", 10, 20, 30});
  theirs.diverged.push_back("'b' diverged at step 3");
  FakeRanks rank1(1, 2);
  rank1.others = {""};  // rank 0's message is not read here: only what rank 1 sends
  workbench::exchange_wave_outcomes(rank1, theirs_before, theirs).ignore_error();
  REQUIRE_FALSE(rank1.sent.empty());

  // Rank 0 trained 'a' and was interrupted after checkpointing it.
  workbench::TrainingOutcome mine;
  mine.models.emplace_back("earlier", OutcomeStatus::kUpToDate);
  const workbench::OutcomeMark before = workbench::mark_of(mine);
  workbench::ModelOutcome a("a", OutcomeStatus::kInterrupted, 11);
  a.steps = 2;
  a.resumed_from = 1;
  a.final_loss = 0.25;
  mine.models.push_back(a);
  mine.checkpointed.emplace_back("a", 2);
  FakeRanks rank0(0, 2);
  rank0.others = {rank1.sent};
  REQUIRE(workbench::exchange_wave_outcomes(rank0, before, mine).is_ok());

  REQUIRE(mine.models.size() == 4);
  CHECK(mine.models[0].name == "earlier");
  CHECK(mine.models[1].name == "a");
  CHECK(mine.models[1].status == OutcomeStatus::kInterrupted);
  CHECK(mine.models[1].resumed_from == 1);
  CHECK(mine.models[2].name == "b");
  CHECK(mine.models[2].status == OutcomeStatus::kDiverged);
  CHECK(mine.models[2].run_id == 12);
  CHECK(std::isnan(mine.models[2].final_loss));
  CHECK(mine.models[2].val_loss == std::optional<double>(0.5));
  CHECK(mine.models[3].status == OutcomeStatus::kNotTrained);
  CHECK(mine.models[3].blocked_by == "b");
  REQUIRE(mine.groups.size() == 1);
  CHECK(mine.groups[0].status == OutcomeStatus::kFailed);
  CHECK(mine.groups[0].precision == "bf16");
  CHECK(mine.groups[0].peak_resident_bytes == 30);
  CHECK(mine.diverged == std::vector<std::string>{"'b' diverged at step 3"});
  CHECK(mine.checkpointed == std::vector<std::pair<std::string, std::int64_t>>{{"a", 2}});

  // A rank that sends something else is an error, not a guess.
  FakeRanks confused(0, 2);
  confused.others = {"not CBOR"};
  CHECK(workbench::exchange_wave_outcomes(confused, before, mine).code() ==
        StatusCode::kCorruption);
}
