// workbench::make_plan: what is up to date in a real (temporary) lineage store, what
// runs and why, the waves and co-batched groups, the memory budget, blocked models, share
// units; and the longest-processing-time assignment of trunks to ranks.
#include <catch2/catch.hpp>

#include "lineage/spec_records.h"
#include "lineage/store.h"
#include "lineage_test_support.h"
#include "runtime/model/parameter_table.h"
#include "spec_test_workspace.h"
#include "workbench/plan.h"
#include "workbench/rank_assignment.h"

using namespace scion;
using workbench::ModelState;
using workbench::Plan;
using workbench::TrainRequest;

namespace {

// Two trunks: `base` with three frozen-trunk adapters (two LoRA + a prefix), a BitFit
// (trains trunk biases: alone) and a grandchild; `other`, a second base with one LoRA.
constexpr const char* kFamily =
    "datasets:\n"
    "  reviews:\n"
    "    path: reviews.jsonl\n"
    "    labels: [negative, positive]\n"
    "models:\n"
    "  base:\n"
    "    architecture: {layers: 2, width: 16, heads: 4, max_length: 32}\n"
    "    train: {data: reviews, objective: classification, steps: 10, batch_size: 16}\n"
    "  a:\n"
    "    from: base\n"
    "    adapt: {lora: {rank: 2, targets: [q, v]}}\n"
    "    train: {data: reviews, steps: 5, batch_size: 16}\n"
    "  b:\n"
    "    from: base\n"
    "    adapt: {lora: {rank: 2, targets: [q]}}\n"
    "    train: {data: reviews, steps: 5, batch_size: 16}\n"
    "  c:\n"
    "    from: base\n"
    "    adapt: {prefix: {virtual_tokens: 2}}\n"
    "    train: {data: reviews, steps: 5, batch_size: 16}\n"
    "  fit:\n"
    "    from: base\n"
    "    adapt: {bitfit: true}\n"
    "    train: {data: reviews, steps: 5, batch_size: 2}\n"
    "  grand:\n"
    "    from: a\n"
    "    adapt: {lora: {rank: 2, targets: [v]}}\n"
    "    train: {data: reviews, epochs: 3, batch_size: 1}\n"
    "  other:\n"
    "    architecture: {layers: 1, width: 16, heads: 2, max_length: 16}\n"
    "    train: {data: reviews, objective: classification, steps: 4, batch_size: 2}\n"
    "  o1:\n"
    "    from: other\n"
    "    adapt: {lora: {rank: 2, targets: [q]}}\n"
    "    train: {data: reviews, steps: 5, batch_size: 2}\n";

spec::Workspace load(const spec::testing::TempWorkspace& dir, const std::string& yaml) {
  spec::LoadResult r = dir.load(yaml);
  INFO((r.errors.empty() ? "" : r.errors.front().to_string()));
  REQUIRE(r.workspace.has_value());
  return std::move(*r.workspace);
}

// Stores `model` with zeros for every parameter, as if trained with `recipe_hash`.
void store_model(lineage::LineageStore& store, const spec::Workspace& ws, const std::string& name,
                 const std::string& recipe_hash) {
  spec::Model model = *ws.find_model(name);
  model.recipe_hash = recipe_hash;
  lineage::RunStart start;
  start.kind = model.is_base() ? lineage::RunKind::kTrain : lineage::RunKind::kAdapt;
  start.recipe_hash = recipe_hash;
  auto run = store.start_run(lineage::model_record_for(ws, model), start);
  REQUIRE(run.is_ok());
  std::vector<std::vector<std::byte>> values;
  std::vector<lineage::ParameterWrite> writes;
  for (const runtime::ParameterSpec& p : runtime::parameter_table(ws, model)) {
    values.emplace_back(static_cast<std::size_t>(p.numel()) * sizeof(float), std::byte{0});
    lineage::ParameterWrite w;
    w.name = p.name;
    w.shape = p.shape;
    w.bytes = values.back();
    w.trainable = p.trainable;
    w.introduced_by = p.introduced_by;
    writes.push_back(std::move(w));
  }
  REQUIRE(store.commit_model(*run, lineage::model_record_for(ws, model), writes).is_ok());
}

Plan plan_of(const spec::Workspace& ws, lineage::LineageStore* store, TrainRequest request = {}) {
  auto plan = workbench::make_plan(ws, store, request);
  INFO((plan ? "" : plan.status().message()));
  REQUIRE(plan.is_ok());
  return std::move(*plan);
}

std::vector<std::vector<std::string>> group_models(const Plan& plan) {
  std::vector<std::vector<std::string>> out;
  for (const workbench::PlannedGroup& g : plan.groups) out.push_back(g.models);
  return out;
}

ModelState state(const Plan& plan, const std::string& name) { return plan.find(name)->state; }

}  // namespace

TEST_CASE("with no store every model runs, in waves and co-batched groups", "[workbench][plan]") {
  spec::testing::TempWorkspace dir;
  const spec::Workspace ws = load(dir, kFamily);
  const Plan plan = plan_of(ws, nullptr);
  CHECK_FALSE(plan.store_exists);
  for (const workbench::PlannedModel& m : plan.models) {
    CHECK(m.state == ModelState::kRuns);
    CHECK(m.reason == "no store yet");
  }
  // Bases and BitFit train their trunk: alone. a, b and c freeze the same trunk: one group.
  // grand waits for a (wave 2); o1 for other, in a group of its own trunk.
  CHECK(group_models(plan) == std::vector<std::vector<std::string>>{
                                  {"base"}, {"other"}, {"fit"}, {"a", "b", "c"}, {"o1"}, {"grand"}});
  std::vector<std::size_t> waves;
  for (const workbench::PlannedGroup& g : plan.groups) waves.push_back(g.wave);
  CHECK(waves == std::vector<std::size_t>{0, 0, 1, 1, 1, 2});
  CHECK(plan.groups[3].trunk == "base");
  CHECK(plan.groups[4].trunk == "other");
  CHECK(plan.groups[3].flops ==
        Approx(plan.find("a")->flops + plan.find("b")->flops + plan.find("c")->flops));
}

TEST_CASE("descendants of a model that trained trunk tensors co-batch apart", "[workbench][plan]") {
  // a2 runs on base's trunk, f2 on fit's trained biases: one FamilyTrainer pass cannot
  // hold both (runtime/model/batch_validation.h refuses two trunk storages).
  spec::testing::TempWorkspace dir;
  const spec::Workspace ws = load(dir,
                                  "datasets:\n"
                                  "  reviews: {path: reviews.jsonl, labels: [negative, positive]}\n"
                                  "models:\n"
                                  "  base:\n"
                                  "    architecture: {layers: 1, width: 16, heads: 2, max_length: 16}\n"
                                  "    train: {data: reviews, objective: classification, steps: 2, batch_size: 2}\n"
                                  "  a:\n"
                                  "    from: base\n"
                                  "    adapt: {lora: {rank: 2, targets: [q]}}\n"
                                  "    train: {data: reviews, steps: 2, batch_size: 2}\n"
                                  "  fit:\n"
                                  "    from: base\n"
                                  "    adapt: {bitfit: true}\n"
                                  "    train: {data: reviews, steps: 2, batch_size: 2}\n"
                                  "  a2:\n"
                                  "    from: a\n"
                                  "    adapt: {lora: {rank: 2, targets: [v]}}\n"
                                  "    train: {data: reviews, steps: 2, batch_size: 2}\n"
                                  "  f2:\n"
                                  "    from: fit\n"
                                  "    adapt: {lora: {rank: 2, targets: [v]}}\n"
                                  "    train: {data: reviews, steps: 2, batch_size: 2}\n"
                                  "  f3:\n"
                                  "    from: fit\n"
                                  "    adapt: {lora: {rank: 2, targets: [q]}}\n"
                                  "    train: {data: reviews, steps: 2, batch_size: 2}\n");
  const Plan plan = plan_of(ws, nullptr);
  CHECK(group_models(plan) == std::vector<std::vector<std::string>>{
                                  {"base"}, {"fit"}, {"a"}, {"a2"}, {"f2", "f3"}});
}

TEST_CASE("a model stored for its recipe is up to date; a changed recipe runs again",
          "[workbench][plan]") {
  spec::testing::TempWorkspace dir;
  lineage::testing::TempDir store_dir;
  const spec::Workspace ws = load(dir, kFamily);
  auto store = lineage::LineageStore::open(store_dir.path(), {});
  REQUIRE(store.is_ok());
  store_model(**store, ws, "base", ws.find_model("base")->recipe_hash);
  store_model(**store, ws, "a", "an earlier recipe");

  const Plan plan = plan_of(ws, store->get());
  CHECK(plan.store_exists);
  CHECK(state(plan, "base") == ModelState::kUpToDate);
  CHECK(plan.find("base")->reason == "stored");
  CHECK(state(plan, "a") == ModelState::kRuns);
  CHECK(plan.find("a")->reason == "its recipe changed");
  CHECK(plan.find("b")->reason == "not in the store");
  // With base stored, its descendants need nothing trained first: wave 0, with other (spec
  // order: fit comes first).
  CHECK(group_models(plan) == std::vector<std::vector<std::string>>{
                                  {"fit"}, {"other"}, {"a", "b", "c"}, {"grand"}, {"o1"}});
  CHECK(plan.groups[1].wave == 0);
  CHECK(plan.groups.back().wave == 1);

  TrainRequest force;
  force.force = true;
  force.models = {"base"};
  force.scope = workbench::TrainScope::kBases;
  const Plan forced = plan_of(ws, store->get(), force);
  CHECK(state(forced, "base") == ModelState::kRuns);
  CHECK(forced.find("base")->reason == "--force");
  CHECK(state(forced, "a") == ModelState::kNotSelected);
  CHECK(group_models(forced) == std::vector<std::vector<std::string>>{{"base"}});
}

TEST_CASE("a model whose parent neither is stored nor runs is blocked", "[workbench][plan]") {
  spec::testing::TempWorkspace dir;
  const spec::Workspace ws = load(dir, kFamily);
  TrainRequest adapt;
  adapt.scope = workbench::TrainScope::kDescendants;
  adapt.models = {"grand"};
  const Plan plan = plan_of(ws, nullptr, adapt);
  CHECK(state(plan, "grand") == ModelState::kBlocked);
  CHECK(plan.groups.empty());
  const Status blocked = plan.blocked();
  REQUIRE_FALSE(blocked.is_ok());
  CHECK_THAT(blocked.message(), Catch::Contains("'grand' needs its parent 'a' trained first"));

  TrainRequest wrong_scope;
  wrong_scope.scope = workbench::TrainScope::kBases;
  wrong_scope.models = {"a"};
  CHECK_FALSE(workbench::make_plan(ws, nullptr, wrong_scope).is_ok());
}

TEST_CASE("an explicit memory budget splits a co-batched group and is checked",
          "[workbench][plan]") {
  spec::testing::TempWorkspace dir;
  const spec::Workspace ws = load(dir, kFamily);
  const Plan unlimited = plan_of(ws, nullptr);
  const workbench::PlannedGroup& trio = unlimited.groups[3];
  REQUIRE(trio.models.size() == 3);
  // A budget just below the trio's estimate (whole MiB) splits it; every split group fits.
  TrainRequest tight;
  tight.memory_budget_mib = trio.memory_bytes >> 20;
  REQUIRE(tight.memory_budget_mib >= 1);
  const Plan split = plan_of(ws, nullptr, tight);
  std::vector<std::string> trio_again;
  std::size_t trio_groups = 0;
  for (const workbench::PlannedGroup& g : split.groups) {
    if (g.trunk != "base" || g.wave != 1 || g.models == std::vector<std::string>{"fit"}) continue;
    ++trio_groups;
    trio_again.insert(trio_again.end(), g.models.begin(), g.models.end());
    if (g.models.size() > 1) CHECK(g.memory_bytes <= tight.memory_budget_mib << 20);
  }
  CHECK(trio_groups > 1);
  CHECK(trio_again == trio.models);
  // A budget of 1 MiB is below the base's own estimate: marked, and refused by run.
  TrainRequest tiny;
  tiny.memory_budget_mib = 1;
  const Plan refused = plan_of(ws, nullptr, tiny);
  CHECK(refused.groups.front().over_budget);
  const Status refusal = refused.memory_refusal();
  REQUIRE_FALSE(refusal.is_ok());
  CHECK(refusal.code() == StatusCode::kOutOfMemory);
  CHECK_THAT(refusal.message(), Catch::Contains("allowed by --memory-budget"));
  CHECK(unlimited.memory_refusal().is_ok() == !unlimited.groups.front().over_available);
}

TEST_CASE("asking for one member of a share unit runs the other too", "[workbench][plan]") {
  spec::testing::TempWorkspace dir;
  const std::string yaml = std::string(kFamily) +
                           "share:\n"
                           "  tasks: {models: [a, b], modules: ['blk.*.attn_q.lora.$model.*']}\n";
  const spec::Workspace ws = load(dir, yaml);
  lineage::testing::TempDir store_dir;
  auto store = lineage::LineageStore::open(store_dir.path(), {});
  REQUIRE(store.is_ok());
  for (const char* name : {"base", "a", "b"})
    store_model(**store, ws, name, ws.find_model(name)->recipe_hash);
  TrainRequest adapt_a;
  adapt_a.scope = workbench::TrainScope::kDescendants;
  adapt_a.models = {"a"};
  adapt_a.force = true;
  const Plan plan = plan_of(ws, store->get(), adapt_a);
  CHECK(state(plan, "b") == ModelState::kRuns);
  CHECK(plan.find("b")->reason == "shares modules with 'a'");
  REQUIRE(plan.notes.size() == 1);
  CHECK_THAT(plan.notes.front(), Catch::Contains("'b' trains too"));
  REQUIRE(plan.groups.size() == 1);
  CHECK(plan.groups.front().models == std::vector<std::string>{"a", "b"});
  CHECK(plan.groups.front().shares == std::vector<std::string>{"tasks"});
}

TEST_CASE("epochs count optimizer steps over the examples less the validation split",
          "[workbench][plan]") {
  spec::Model m;
  m.training = spec::TrainingSpec{};
  m.training->epochs = 3;
  m.training->batch_size = 4;
  m.training->grad_accumulation = 2;
  m.training->validation_split = 0.2f;
  // 50 examples, 40 kept: 10 micro-batches, 5 steps an epoch.
  CHECK(workbench::recipe_steps(m, 50) == 15);
  m.training->steps = 7;
  CHECK(workbench::recipe_steps(m, 50) == 7);
  // grand: 3 epochs of batch 1 over reviews.jsonl's 2 examples.
  spec::testing::TempWorkspace dir;
  const spec::Workspace ws = load(dir, kFamily);
  CHECK(plan_of(ws, nullptr).find("grand")->steps == 6);
}

TEST_CASE("longest processing time first assigns the largest work to the least loaded rank",
          "[workbench][ranks]") {
  using workbench::assign_longest_first;
  // 7 -> r0, 5 -> r1, 4 -> r1 (5 < 7), 3 -> r0 (7 < 9), 3 -> r1 (9 < 10): loads 10 and 12.
  CHECK(assign_longest_first({3, 7, 4, 5, 3}, 2) ==
        std::vector<std::vector<std::size_t>>{{1, 0}, {3, 2, 4}});
  // More ranks than work: the rest stay idle; equal work goes to the lowest rank first.
  CHECK(assign_longest_first({2, 2}, 3) == std::vector<std::vector<std::size_t>>{{0}, {1}, {}});
  CHECK(assign_longest_first({}, 2) == std::vector<std::vector<std::size_t>>{{}, {}});
  CHECK(assign_longest_first({1, 2, 3}, 1) == std::vector<std::vector<std::size_t>>{{2, 1, 0}});
}

TEST_CASE("a trunk's groups stay on one rank", "[workbench][ranks]") {
  spec::testing::TempWorkspace dir;
  const spec::Workspace ws = load(dir, kFamily);
  const Plan plan = plan_of(ws, nullptr);
  const auto ranks = workbench::assign_ranks(plan, 2);
  REQUIRE(ranks.size() == 2);
  // base's family has far more work than other's: rank 0 gets base, rank 1 other.
  CHECK(ranks[0].trunks == std::vector<std::string>{"base"});
  CHECK(ranks[1].trunks == std::vector<std::string>{"other"});
  CHECK(ranks[0].groups == std::vector<std::size_t>{0, 2, 3, 5});
  CHECK(ranks[1].groups == std::vector<std::size_t>{1, 4});
  double total = 0;
  for (const workbench::PlannedGroup& g : plan.groups) total += g.flops;
  CHECK(ranks[0].flops + ranks[1].flops == Approx(total));
  CHECK(ranks[0].flops > ranks[1].flops);
  const auto one = workbench::assign_ranks(plan, 1);
  CHECK(one[0].groups.size() == plan.groups.size());
}
