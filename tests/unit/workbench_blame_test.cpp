// workbench::blame_test: where each failure of a model comes from up its chain, judged
// from outputs built by hand (no training, no store).
#include <catch2/catch.hpp>

#include "workbench/blame.h"

using namespace scion;
using workbench::BlamedCase;
using workbench::CompiledTest;
using workbench::FamilyOutputs;

namespace {

assertions::ModelOutput says(const std::string& label) {
  const bool positive = label == "positive";
  return {{"negative", "positive"}, {positive ? 0.1f : 0.9f, positive ? 0.9f : 0.1f}, {}};
}

// An MFT test expecting "positive" on inputs "a", "b", "c", "d" (cases t/0 to t/3).
CompiledTest expects_positive() {
  CompiledTest t;
  t.test.name = "t";
  t.test.type = assertions::TestType::kMft;
  t.test.expect.kind = assertions::Expectation::Kind::kLabel;
  t.test.expect.labels = {"positive"};
  int n = 0;
  for (const char* input : {"a", "b", "c", "d"})
    t.cases.cases.push_back({.id = "t/" + std::to_string(n++), .input = input});
  return t;
}

// Each model's answer to each input, as a string of P (positive) / N (negative) per model.
FamilyOutputs outputs(const std::vector<std::pair<std::string, std::string>>& answers) {
  FamilyOutputs out;
  for (const auto& [model, letters] : answers)
    for (std::size_t i = 0; i < letters.size(); ++i)
      out.of(model)[std::string(1, static_cast<char>('a' + i))] =
          says(letters[i] == 'P' ? "positive" : "negative");
  return out;
}

// Case id -> chain index of the model that introduced its failure.
std::map<std::string, std::size_t> origins(const workbench::TestBlame& blamed) {
  std::map<std::string, std::size_t> by_case;
  for (const BlamedCase& b : blamed.failing) by_case[b.case_id] = b.origin;
  return by_case;
}

}  // namespace

TEST_CASE("blame finds the model that introduced each failure", "[workbench][blame]") {
  const std::vector<std::string> chain = {"child", "parent", "base"};
  // a: everyone passes. b: only the child fails (introduced by child).
  // c: child and parent fail, base passes (introduced by parent).
  // d: every model fails (present at the top: inherited from base).
  const FamilyOutputs out = outputs({{"child", "PNNN"}, {"parent", "PPNN"}, {"base", "PPPN"}});
  auto blamed = workbench::blame_test(expects_positive(), chain, out);
  REQUIRE(blamed.is_ok());
  CHECK(blamed->cases == 4);
  REQUIRE(blamed->failing.size() == 3);
  const auto by_case = origins(*blamed);
  CHECK(by_case.count("t/0") == 0);
  CHECK(by_case.at("t/1") == 0);
  CHECK(by_case.at("t/2") == 1);
  CHECK(by_case.at("t/3") == 2);
  CHECK(blamed->by_origin == std::map<std::size_t, std::size_t>{{0, 1}, {1, 1}, {2, 1}});
  CHECK_FALSE(blamed->failing.front().reason.empty());
}

TEST_CASE("a failure that skips a generation is introduced below the nearest passing ancestor",
          "[workbench][blame]") {
  // The parent passes "a" although base and child fail it: the child introduced it.
  const FamilyOutputs out = outputs({{"child", "N"}, {"parent", "P"}, {"base", "N"}});
  CompiledTest test = expects_positive();
  test.cases.cases.resize(1);
  auto blamed = workbench::blame_test(test, {"child", "parent", "base"}, out);
  REQUIRE(blamed.is_ok());
  REQUIRE(blamed->failing.size() == 1);
  CHECK(blamed->failing[0].origin == 0);
}

TEST_CASE("blame with one case judges only that case", "[workbench][blame]") {
  const FamilyOutputs out = outputs({{"child", "NNNN"}, {"base", "PPPP"}});
  auto blamed = workbench::blame_test(expects_positive(), {"child", "base"}, out, 2);
  REQUIRE(blamed.is_ok());
  CHECK(blamed->cases == 1);
  REQUIRE(blamed->failing.size() == 1);
  CHECK(blamed->failing[0].case_id == "t/2");
  CHECK(blamed->failing[0].input == "c");
}

TEST_CASE("a model alone owns its failures", "[workbench][blame]") {
  const FamilyOutputs out = outputs({{"base", "NP"}});
  CompiledTest test = expects_positive();
  test.cases.cases.resize(2);
  auto blamed = workbench::blame_test(test, {"base"}, out);
  REQUIRE(blamed.is_ok());
  REQUIRE(blamed->failing.size() == 1);
  CHECK(blamed->failing[0].origin == 0);
  CHECK(blamed->by_origin == std::map<std::size_t, std::size_t>{{0, 1}});
}

TEST_CASE("an ancestor whose labels do not fit the test ends the chain for the case",
          "[workbench][blame]") {
  FamilyOutputs out = outputs({{"child", "N"}});
  out.of("base")["a"] = {{"spam", "ham"}, {0.5f, 0.5f}, {}};
  CompiledTest test = expects_positive();
  test.cases.cases.resize(1);
  auto blamed = workbench::blame_test(test, {"child", "base"}, out);
  REQUIRE(blamed.is_ok());
  REQUIRE(blamed->failing.size() == 1);
  CHECK(blamed->failing[0].origin == 0);  // the chain ends at the child for this case

  // The blamed model's own outputs not fitting the test is an error.
  auto wrong = workbench::blame_test(test, {"base"}, out);
  CHECK_FALSE(wrong.is_ok());
}

TEST_CASE("a failure comes from the model just below the nearest ancestor that passes",
          "[workbench][blame]") {
  using workbench::failure_origin;
  CHECK(failure_origin({true}) == 0);                     // alone: its own
  CHECK(failure_origin({true, false}) == 0);              // the parent passes: introduced here
  CHECK(failure_origin({true, true, false}) == 1);        // the parent fails, the grandparent passes
  CHECK(failure_origin({true, true, true}) == 2);         // no one passes: the top of the chain
  CHECK(failure_origin({true, true, true, false}) == 2);
}
