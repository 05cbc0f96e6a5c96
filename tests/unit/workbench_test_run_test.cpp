// workbench::judge_test and exceeded: judging a test on one model (and its parent) from
// outputs built by hand, the rows the store records, and when a test result fails.
#include <catch2/catch.hpp>

#include "workbench/test_run.h"

using namespace scion;
using workbench::CompiledTest;
using workbench::FamilyOutputs;

namespace {

assertions::ModelOutput says(bool positive) {
  return {{"negative", "positive"}, {positive ? 0.2f : 0.8f, positive ? 0.8f : 0.2f}, {}};
}

// An MFT test expecting "positive" on inputs "a".."d" (cases t/0..t/3), 25% failures allowed.
CompiledTest expects_positive(bool regression_parent) {
  CompiledTest t;
  t.test.name = std::string("expects-positive");
  t.test.origin = std::string("scion.yaml:9:3: test 't'");
  t.test.type = assertions::TestType::kMft;
  t.test.max_failure_rate = 0.25;
  t.test.regression_parent = regression_parent;
  t.test.expect.kind = assertions::Expectation::Kind::kLabel;
  t.test.expect.labels = {"positive"};
  int n = 0;
  for (const char* input : {"a", "b", "c", "d"})
    t.cases.cases.push_back({.id = "t/" + std::to_string(n++), .input = input});
  return t;
}

// "PNNP": the model's answer to a, b, c, d.
void answer(FamilyOutputs& out, const std::string& model, const std::string& letters) {
  for (std::size_t i = 0; i < letters.size(); ++i)
    out.of(model)[std::string(1, static_cast<char>('a' + i))] = says(letters[i] == 'P');
}

}  // namespace

TEST_CASE("judging a test counts failures and records every case", "[workbench][test_run]") {
  FamilyOutputs out;
  answer(out, "child", "PNPP");
  auto judged = workbench::judge_test(expects_positive(false), "child", "recipe1", "", "", out, 3);
  REQUIRE(judged.is_ok());
  CHECK(judged->result.cases == 4);
  CHECK(judged->result.failures == 1);
  CHECK(judged->result.failure_rate == Approx(0.25));
  CHECK(judged->result.passed);
  CHECK_FALSE(workbench::exceeded(judged->result));
  CHECK(judged->note.empty());
  CHECK(judged->scores.is_null());  // classifier tests keep no log-likelihoods
  REQUIRE(judged->rows.size() == 4);
  CHECK(judged->rows[1].case_index == 1);
  CHECK(judged->rows[1].input == "b");
  CHECK_FALSE(judged->rows[1].passed);
  CHECK(judged->rows[0].passed);
  CHECK(judged->rows[1].model_version == "recipe1");
  REQUIRE(judged->result.examples.size() == 1);
  CHECK(judged->result.examples[0].case_id == "t/1");
  // A failing case's stored output is the example a fresh judgement prints, so a stored
  // result reads back as it was judged, naming the prediction once.
  CHECK(judged->rows[1].output == judged->result.examples[0].reason);
  CHECK(judged->rows[1].output == "predicted negative (0.800), expected positive");
  CHECK(judged->rows[0].output == "positive (0.80)");
}

TEST_CASE("a test over its max_failure_rate is exceeded", "[workbench][test_run]") {
  FamilyOutputs out;
  answer(out, "child", "PNNP");
  auto judged = workbench::judge_test(expects_positive(false), "child", "r", "", "", out, 1);
  REQUIRE(judged.is_ok());
  CHECK(judged->result.failures == 2);
  CHECK(workbench::exceeded(judged->result));
  CHECK_FALSE(judged->result.passed);
  CHECK(judged->result.examples.size() == 1);  // max_examples
}

TEST_CASE("regression: parent counts only failures the parent does not share",
          "[workbench][test_run]") {
  FamilyOutputs out;
  answer(out, "child", "NNNP");
  answer(out, "parent", "NNPP");
  auto judged = workbench::judge_test(expects_positive(true), "child", "r", "parent", "", out, 3);
  REQUIRE(judged.is_ok());
  CHECK(judged->result.failures == 1);   // c: the parent passes it
  CHECK(judged->result.inherited == 2);  // a, b: the parent fails them too
  CHECK(judged->rows[0].passed);         // inherited is not a failure of this model
  CHECK_FALSE(judged->rows[2].passed);
  CHECK_FALSE(workbench::exceeded(judged->result));
}

TEST_CASE("regression: parent without a comparable parent runs plainly, with a note",
          "[workbench][test_run]") {
  FamilyOutputs out;
  answer(out, "base", "NNNP");
  auto judged = workbench::judge_test(expects_positive(true), "base", "r", "",
                                      "a base has no parent", out, 3);
  REQUIRE(judged.is_ok());
  CHECK(judged->result.failures == 3);
  CHECK(judged->result.inherited == 0);
  CHECK(judged->note == "regression: parent not applied: a base has no parent");
}

TEST_CASE("outputs that do not fit the test are an error naming the test and model",
          "[workbench][test_run]") {
  FamilyOutputs out;
  for (const char* input : {"a", "b", "c", "d"}) out.of("m")[input] = {{"spam", "ham"}, {1, 0}, {}};
  auto judged = workbench::judge_test(expects_positive(false), "m", "r", "", "", out, 3);
  REQUIRE_FALSE(judged.is_ok());
  CHECK_THAT(judged.status().message(),
             Catch::StartsWith("scion.yaml:9:3: test 't' on model 'm': "));
}
