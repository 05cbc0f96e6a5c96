// workbench::prepare_predictions, violations_of and check_finite: which models predict and
// which assertions each checks (a parent assertion on a base is skipped with a note), the
// violations found in outputs built by hand, and a non-finite output refused.
#include <catch2/catch.hpp>
#include <cmath>
#include <limits>

#include "spec_test_workspace.h"
#include "workbench/prediction.h"

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
    "    train: {data: reviews, objective: classification, steps: 1}\n"
    "  child:\n"
    "    from: base\n"
    "    adapt: {lora: {rank: 2, targets: [q]}}\n"
    "    train: {data: reviews, steps: 1}\n"
    "assertions:\n"
    "  sure:\n"
    "    kind: low_confidence\n"
    "    threshold: 0.7\n"
    "  agrees:\n"
    "    kind: parent_disagreement\n";

spec::Workspace load(const spec::testing::TempWorkspace& dir) {
  spec::LoadResult r = dir.load(kFamily);
  INFO((r.errors.empty() ? "" : r.errors.front().to_string()));
  REQUIRE(r.workspace.has_value());
  return std::move(*r.workspace);
}

assertions::ModelOutput says(float positive) {
  return {{"negative", "positive"}, {1.0f - positive, positive}, {}};
}

std::vector<std::string> names_of(const std::vector<workbench::PredictionViolation>& violations) {
  std::vector<std::string> names;
  for (const workbench::PredictionViolation& v : violations) names.push_back(v.assertion);
  return names;
}

}  // namespace

TEST_CASE("predictors check the assertions that apply to them", "[workbench][predict]") {
  spec::testing::TempWorkspace dir;
  const spec::Workspace ws = load(dir);
  workbench::PredictRequest request{.models = {"child", "base", "child"},
                                    .texts = {{"fine", "--text 1"}},
                                    .check_assertions = true};
  auto setup = workbench::prepare_predictions(ws, request);
  REQUIRE(setup.is_ok());
  REQUIRE(setup->predictors.size() == 2);  // "child" named twice answers once
  const workbench::Predictor& child = setup->predictors[0];
  const workbench::Predictor& base = setup->predictors[1];
  CHECK(child.model->name == "child");
  REQUIRE(child.parent != nullptr);
  CHECK(child.parent->name == "base");
  CHECK(child.checks.size() == 2);
  CHECK(base.parent == nullptr);
  CHECK(base.checks.size() == 1);  // the parent assertion cannot apply to a base
  REQUIRE(setup->notes.size() == 1);
  CHECK_THAT(setup->notes[0], Catch::Contains("assertion 'agrees' skipped for 'base'"));

  workbench::FamilyOutputs outputs;
  outputs.of("child")["fine"] = says(0.9f);
  outputs.of("base")["fine"] = says(0.2f);
  auto violations = workbench::violations_of(child, {"fine", std::nullopt}, outputs);
  REQUIRE(violations.is_ok());
  CHECK(names_of(*violations) == std::vector<std::string>{"agrees"});  // confident, disagrees
  outputs.of("child")["fine"] = says(0.4f);
  violations = workbench::violations_of(child, {"fine", std::nullopt}, outputs);
  REQUIRE(violations.is_ok());
  CHECK(names_of(*violations) == std::vector<std::string>{"sure"});  // unsure, agrees
  for (const workbench::PredictionViolation& v : *violations) CHECK(v.severity > 0);

  SECTION("without --assert nothing is checked") {
    request.check_assertions = false;
    auto plain = workbench::prepare_predictions(ws, request);
    REQUIRE(plain.is_ok());
    CHECK(plain->predictors[0].checks.empty());
    CHECK(plain->notes.empty());
  }
  SECTION("a NaN probability is no prediction") {
    CHECK(workbench::check_finite(setup->predictors, {{"fine", std::nullopt}}, outputs).is_ok());
    outputs.of("base")["fine"] = says(std::numeric_limits<float>::quiet_NaN());
    const Status s = workbench::check_finite(setup->predictors, {{"fine", std::nullopt}}, outputs);
    CHECK(s.code() == StatusCode::kDiverged);
    CHECK_THAT(s.message(),
               Catch::Contains("model 'base'") && Catch::Contains("scion run --force base"));
  }
  SECTION("an unknown model is an error") {
    request.models = {"nope"};
    CHECK_FALSE(workbench::prepare_predictions(ws, request).is_ok());
  }
}
