// workbench::check_against_spec (what `scion fsck` checks beyond the store) and
// remove_stale_checkpoints (what `scion gc` removes besides objects): stored parameter
// names against the spec, and checkpoints that can no longer be resumed.
#include <catch2/catch.hpp>
#include <filesystem>

#include "lineage/safetensors.h"
#include "lineage/spec_records.h"
#include "lineage/store.h"
#include "lineage_test_support.h"
#include "runtime/model/parameter_table.h"
#include "spec_test_workspace.h"
#include "workbench/checkpoints.h"
#include "workbench/store_checks.h"

using namespace scion;

namespace {

constexpr const char* kFamily =
    "datasets:\n"
    "  reviews:\n"
    "    path: reviews.jsonl\n"
    "    labels: [negative, positive]\n"
    "models:\n"
    "  base:\n"
    "    architecture: {layers: 1, width: 16, heads: 2, max_length: 16}\n"
    "    train: {data: reviews, objective: classification, steps: 1}\n";

// Stores `model` (of its spec recipe) with zeros, leaving out the parameter `skip`.
void store_model(lineage::LineageStore& store, const spec::Workspace& ws, const spec::Model& model,
                 const std::string& skip) {
  lineage::RunStart start{.kind = lineage::RunKind::kTrain, .recipe_hash = model.recipe_hash};
  auto run = store.start_run(lineage::model_record_for(ws, model), start);
  REQUIRE(run.is_ok());
  std::vector<std::vector<std::byte>> values;
  values.reserve(64);
  std::vector<lineage::ParameterWrite> writes;
  for (const runtime::ParameterSpec& p : runtime::parameter_table(ws, model)) {
    if (p.name == skip) continue;
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

void write_checkpoint(lineage::LineageStore& store, const std::string& model,
                      const std::string& recipe_hash) {
  std::filesystem::create_directories(store.dir() / "checkpoints");
  const std::vector<std::byte> zeros(4 * sizeof(float), std::byte{0});
  REQUIRE(lineage::write_safetensors(
              store.env(), store.dir() / "checkpoints" / (model + ".safetensors"),
              {{"param.x", lineage::DType::kF32, {4}, zeros}},
              {{"model", model}, {"recipe_hash", recipe_hash}, {"step", "1"}})
              .is_ok());
}

}  // namespace

TEST_CASE("fsck finds stored parameters the spec does not define, and stale checkpoints",
          "[workbench][fsck]") {
  spec::testing::TempWorkspace dir;
  spec::LoadResult loaded = dir.load(kFamily);
  REQUIRE(loaded.workspace.has_value());
  const spec::Workspace& ws = *loaded.workspace;
  lineage::testing::TempDir store_dir;
  auto store = lineage::LineageStore::open(store_dir.path());
  REQUIRE(store.is_ok());

  lineage::FsckReport clean;
  REQUIRE(workbench::check_against_spec(**store, &ws, "", clean).is_ok());
  CHECK(clean.problems.empty());
  CHECK(clean.notes.empty());

  store_model(**store, ws, *ws.find_model("base"), "ln_f.bias");
  write_checkpoint(**store, "gone", std::string(64, 'a'));  // a model no longer in the spec
  write_checkpoint(**store, "base", ws.find_model("base")->recipe_hash);  // finished since
  lineage::FsckReport report;
  REQUIRE(workbench::check_against_spec(**store, &ws, "", report).is_ok());
  REQUIRE(report.problems.size() == 1);
  CHECK(report.problems[0].subject == "model 'base'");
  CHECK_THAT(report.problems[0].message,
             Catch::Contains("lacks 1 parameter(s)") && Catch::Contains("ln_f.bias"));
  CHECK(report.notes.size() == 2);

  lineage::FsckReport without_spec;
  REQUIRE(workbench::check_against_spec(**store, nullptr, "no spec", without_spec).is_ok());
  CHECK(without_spec.problems.empty());     // names cannot be checked without it
  REQUIRE(without_spec.notes.size() == 2);  // the spec note; only "finished" is known
  CHECK_THAT(without_spec.notes[0].message, Catch::StartsWith("no spec"));

  auto would = workbench::remove_stale_checkpoints(**store, &ws, /*dry_run=*/true);
  REQUIRE(would.is_ok());
  CHECK(would->size() == 2);
  CHECK(std::filesystem::exists((*store)->dir() / "checkpoints" / "gone.safetensors"));
  auto removed = workbench::remove_stale_checkpoints(**store, &ws, /*dry_run=*/false);
  REQUIRE(removed.is_ok());
  CHECK(removed->size() == 2);
  CHECK_FALSE(std::filesystem::exists((*store)->dir() / "checkpoints" / "gone.safetensors"));
  CHECK_FALSE(std::filesystem::exists((*store)->dir() / "checkpoints" / "base.safetensors"));
}
