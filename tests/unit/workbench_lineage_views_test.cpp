// workbench::family and subtree: the statuses the lineage tree, export and report show, from
// the spec and the stored models joined (no store needed: StoredModel values by hand).
#include <catch2/catch.hpp>

#include "spec_test_workspace.h"
#include "workbench/lineage_views.h"

using namespace scion;
using workbench::FamilyNode;

namespace {

constexpr const char* kSpec =
    "datasets:\n"
    "  reviews:\n"
    "    path: reviews.jsonl\n"
    "    labels: [negative, positive]\n"
    "models:\n"
    "  base:\n"
    "    architecture: {layers: 1, width: 16, heads: 2, max_length: 16}\n"
    "    train: {data: reviews, objective: classification, steps: 2}\n"
    "  a:\n"
    "    from: base\n"
    "    adapt: {lora: {rank: 2, targets: [q]}}\n"
    "    train: {data: reviews, steps: 2}\n"
    "  b:\n"
    "    from: base\n"
    "    adapt: {bitfit: true}\n"
    "    train: {data: reviews, steps: 2}\n"
    "  c:\n"
    "    from: a\n"
    "    adapt: {prefix: {virtual_tokens: 2}}\n"
    "    train: {data: reviews, steps: 2}\n";

lineage::StoredModel stored(const std::string& name, const std::string& parent,
                            std::optional<std::string> recipe_hash) {
  lineage::StoredModel m;
  m.name = name;
  m.parent = parent;
  m.recipe_hash = std::move(recipe_hash);
  m.adaptation = nlohmann::json::object();
  return m;
}

std::map<std::string, std::string> statuses(const std::vector<FamilyNode>& nodes) {
  std::map<std::string, std::string> out;
  for (const FamilyNode& n : nodes) out[n.name] = n.status;
  return out;
}

}  // namespace

TEST_CASE("the family joins the spec and the store, parents first", "[workbench][lineage]") {
  spec::testing::TempWorkspace dir;
  spec::LoadResult loaded = dir.load(kSpec);
  REQUIRE(loaded.workspace.has_value());
  const spec::Workspace& ws = *loaded.workspace;
  const std::vector<lineage::StoredModel> in_store = {
      stored("base", "", ws.find_model("base")->recipe_hash),
      stored("a", "base", std::string("an older recipe")),
      stored("gone", "base", std::string("whatever")),
      stored("b", "base", std::nullopt)};
  std::map<std::string, workbench::ModelHistory> histories;
  histories["b"].interrupted_at = 7;
  histories["b"].resumable = true;
  const auto nodes = workbench::family(in_store, &ws, histories);
  CHECK(statuses(nodes) == std::map<std::string, std::string>{
                               {"base", "trained"},
                               {"a", "out of date"},
                               {"b", "interrupted at step 7, resumable"},
                               {"c", "not trained"},
                               {"gone", "not in spec"}});
  std::vector<std::string> order;
  for (const FamilyNode& n : nodes) order.push_back(n.name);
  CHECK(order == std::vector<std::string>{"base", "a", "c", "b", "gone"});

  // Without the spec the store alone speaks: what it holds is trained.
  CHECK(statuses(workbench::family(in_store, nullptr))["a"] == "trained");

  auto below_a = workbench::subtree(nodes, "a");
  REQUIRE(below_a.is_ok());
  CHECK(below_a->size() == 2);
  auto unknown = workbench::subtree(nodes, "gonne");
  REQUIRE_FALSE(unknown.is_ok());
  CHECK_THAT(unknown.status().message(), Catch::Contains("did you mean 'gone'"));
}

TEST_CASE("lineage log's changes are the recipe's, not the run's outcomes",
          "[workbench][lineage]") {
  const std::string model = "a";
  const auto adapt_run = [&model](std::int64_t id, double lr, std::int64_t kept_step) {
    return lineage::RunRecord{
        .id = id,
        .model = model,
        .kind = lineage::RunKind::kAdapt,
        .status = lineage::RunStatus::kFinished,
        .hyperparameters = {{"steps", 120},
                            {"lr", lr},
                            {"kept", {{"metric", "val_f1"}, {"step", kept_step}, {"value", 0.5}}}}};
  };
  // Newest first: run 2 changed the learning rate, and keep_best kept another step.
  const auto changes =
      workbench::recipe_changes({adapt_run(2, 0.001, 120), adapt_run(1, 0.003, 40)});
  REQUIRE(changes.count(2) == 1);
  REQUIRE(changes.at(2).size() == 1);
  CHECK(changes.at(2)[0].a == 0.003);
  CHECK(changes.at(2)[0].b == 0.001);
  CHECK(changes.at(2)[0].field.find("kept") == std::string::npos);
}
