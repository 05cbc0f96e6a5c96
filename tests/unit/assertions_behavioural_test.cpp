// Behavioural tests end to end without a model: a spec test is compiled, its cases
// generated, and each expectation and MFT / INV / DIR rule judged on synthetic outputs.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>

#include "assertions/behavioural_test.h"
#include "assertions/judge.h"
#include "assertions/words.h"

using namespace scion;
using namespace scion::assertions;

namespace {

spec::TestSpec make_spec(std::string type, nlohmann::json body) {
  return spec::TestSpec{.name = "t",
                        .location = {"scion.yaml", 7, 3},
                        .type = std::move(type),
                        .capability = "Vocabulary",
                        .models = {},
                        .max_failure_rate = 0.25f,
                        .body = std::move(body)};
}

BehaviouralTest compile_ok(std::string type, nlohmann::json body) {
  auto t = compile_test(make_spec(std::move(type), std::move(body)), LexiconSet::builtin(), "/tmp");
  INFO((t.is_ok() ? std::string() : t.status().message()));
  REQUIRE(t.is_ok());
  return *t;
}

std::string compile_error(std::string type, nlohmann::json body) {
  auto t = compile_test(make_spec(std::move(type), std::move(body)), LexiconSet::builtin(), "/tmp");
  REQUIRE_FALSE(t.is_ok());
  CHECK(t.status().code() == StatusCode::kSpecError);
  CHECK_THAT(t.status().message(), Catch::StartsWith("scion.yaml:7:3: tests.t"));
  return t.status().message();
}

ModelOutput sentiment(float negative, float positive) {
  return ModelOutput{{"negative", "positive"}, {negative, positive}, {}};
}

Verdict judge(const BehaviouralTest& t, const TestCase& c, const ModelOutput& original,
              const ModelOutput* perturbed = nullptr) {
  auto v = judge_case(t, c, CaseOutputs{&original, perturbed, nullptr, nullptr});
  INFO((v.is_ok() ? std::string() : v.status().message()));
  REQUIRE(v.is_ok());
  return *v;
}

}  // namespace

TEST_CASE("an MFT test generates template cases with their fills", "[assertions][test]") {
  const auto t = compile_ok("mft", {{"template", "{name} thinks the {noun} is {pos_adj}."},
                                    {"max_cases", 12},
                                    {"seed", 3},
                                    {"expect", {{"label", "positive"}}}});
  auto cases = generate_cases(t);
  REQUIRE(cases.is_ok());
  REQUIRE(cases->cases.size() == 12);
  const TestCase& c = cases->cases[0];
  CHECK(c.id == "t/0");
  CHECK(c.source == "template 0");
  REQUIRE(c.fills.size() == 3);
  CHECK_THAT(c.input, Catch::Contains(c.fills[0].second) && Catch::Contains(c.fills[1].second));
  CHECK_FALSE(c.perturbed.has_value());
  // Deterministic for a seed.
  auto again = generate_cases(t);
  for (std::size_t i = 0; i < 12; ++i) CHECK(again->cases[i].input == cases->cases[i].input);
}

TEST_CASE("label, not_label and predicate expectations judge MFT cases", "[assertions][judge]") {
  const TestCase c{.id = "t/0",
                   .input = "fine",
                   .perturbed = {},
                   .source = "inputs[0]",
                   .fills = {},
                   .prefer = {},
                   .over = {}};
  const auto label = compile_ok("mft", {{"inputs", {"fine"}}, {"expect", {{"label", "positive"}}}});
  CHECK(judge(label, c, sentiment(0.2f, 0.8f)).outcome == Outcome::kPass);
  const Verdict fail = judge(label, c, sentiment(0.7f, 0.3f));
  CHECK(fail.outcome == Outcome::kFail);
  CHECK_THAT(fail.reason, Catch::Contains("predicted negative (0.700), expected positive"));

  const auto not_label =
      compile_ok("mft", {{"inputs", {"fine"}}, {"expect", {{"not_label", "negative"}}}});
  CHECK(judge(not_label, c, sentiment(0.2f, 0.8f)).outcome == Outcome::kPass);
  CHECK(judge(not_label, c, sentiment(0.9f, 0.1f)).outcome == Outcome::kFail);

  const auto predicate = compile_ok(
      "mft", {{"inputs", {"fine"}},
              {"expect", {{"predicate", "p.positive > 0.6 && margin > 0.1 && length == 4"}}}});
  CHECK(judge(predicate, c, sentiment(0.3f, 0.7f)).outcome == Outcome::kPass);
  CHECK(judge(predicate, c, sentiment(0.45f, 0.55f)).outcome == Outcome::kFail);

  // A label the model does not have is an error, not a failure.
  const auto other = compile_ok("mft", {{"inputs", {"fine"}}, {"expect", {{"label", "neutral"}}}});
  auto bad = judge_case(other, c, CaseOutputs{nullptr, nullptr, nullptr, nullptr});
  CHECK_FALSE(bad.is_ok());
  const ModelOutput out = sentiment(0.5f, 0.5f);
  auto unknown = judge_case(other, c, CaseOutputs{&out, nullptr, nullptr, nullptr});
  REQUIRE_FALSE(unknown.is_ok());
  CHECK_THAT(unknown.status().message(),
             Catch::Contains("'neutral'") && Catch::Contains("negative, positive"));
}

TEST_CASE("language-model preference fills slots and compares log-likelihoods",
          "[assertions][judge]") {
  const auto t = compile_ok(
      "mft", {{"template", "The {profession} said that"},
              {"max_cases", 2},
              {"expect", {{"prefer", " the {profession} was right"}, {"over", " it rained"}}}});
  auto cases = generate_cases(t);
  REQUIRE(cases.is_ok());
  const TestCase& c = cases->cases[0];
  CHECK(c.prefer == std::string(" the ").append(c.fills[0].second).append(" was right"));
  ModelOutput lm;
  lm.continuation_logprobs = {{c.prefer, -3.0}, {c.over, -5.0}};
  lm.continuation_tokens = {{c.prefer, 1}, {c.over, 1}};  // per token as in total
  CHECK(judge(t, c, lm).outcome == Outcome::kPass);
  lm.continuation_logprobs[c.over] = -2.0;
  CHECK(judge(t, c, lm).outcome == Outcome::kFail);
  lm.continuation_logprobs.erase(c.over);
  CHECK_FALSE(judge_case(t, c, CaseOutputs{&lm, nullptr, nullptr, nullptr}).is_ok());
  CHECK_THAT(
      compile_error("mft", {{"inputs", {"x"}}, {"expect", {{"prefer", "{name}"}, {"over", "b"}}}}),
      Catch::Contains("tests.t.expect.prefer: uses slot '{name}'"));
  CHECK(t.scores_continuations());
  CHECK_FALSE(compile_ok("mft", {{"inputs", {"x"}}, {"expect", {{"label", "positive"}}}})
                  .scores_continuations());
  // An empty continuation has nothing to score; a predicate sees no lm.* scores.
  CHECK_THAT(compile_error("mft", {{"inputs", {"x"}}, {"expect", {{"prefer", ""}, {"over", "b"}}}}),
             Catch::Contains("tests.t.expect.prefer: is empty"));
  CHECK_THAT(compile_error("mft", {{"inputs", {"x"}}, {"expect", {{"prefer", "a"}, {"over", ""}}}}),
             Catch::Contains("tests.t.expect.over: is empty"));
  CHECK_THAT(compile_error("mft", {{"inputs", {"x"}}, {"expect", {{"predicate", "lm.yes > lm.no"}}}}),
             Catch::Contains("tests.t.expect.predicate: predicates judge classifier outputs") &&
                 Catch::Contains("prefer"));
}

TEST_CASE("a preference scores per token by default, so a longer continuation can win",
          "[assertions][judge]") {
  const nlohmann::json prefer = {{"prefer", " was a great film"}, {"over", " bad"}};
  nlohmann::json summed = prefer;
  summed["score"] = "sum";
  const auto mean = compile_ok("mft", {{"inputs", {"It"}}, {"expect", prefer}});
  const auto sum = compile_ok("mft", {{"inputs", {"It"}}, {"expect", summed}});
  CHECK(mean.expect.score == Expectation::Score::kMean);
  CHECK(sum.expect.score == Expectation::Score::kSum);
  auto cases = generate_cases(mean);
  REQUIRE(cases.is_ok());
  const TestCase& c = cases->cases[0];
  // 16 tokens at -0.5 nats each against 4 at -1.0: likelier per token, less likely in total.
  ModelOutput lm;
  lm.continuation_logprobs = {{c.prefer, -8.0}, {c.over, -4.0}};
  lm.continuation_tokens = {{c.prefer, 16}, {c.over, 4}};
  const Verdict by_mean = judge(mean, c, lm);
  CHECK(by_mean.outcome == Outcome::kPass);
  CHECK_THAT(by_mean.reason, Catch::Contains("mean log p(\" was a great film\") = -0.500 >"));
  const Verdict by_sum = judge(sum, c, lm);
  CHECK(by_sum.outcome == Outcome::kFail);
  CHECK_THAT(by_sum.reason, Catch::StartsWith("log p(\" was a great film\") = -8.000 <="));
  // The margin is in the score's unit: nats per token under mean.
  nlohmann::json with_margin = prefer;
  with_margin["margin"] = 0.6;
  CHECK(judge(compile_ok("mft", {{"inputs", {"It"}}, {"expect", with_margin}}), c, lm).outcome ==
        Outcome::kFail);
  // A mean needs the token counts; a sum does not.
  lm.continuation_tokens.erase(c.over);
  CHECK_FALSE(judge_case(mean, c, CaseOutputs{&lm, nullptr, nullptr, nullptr}).is_ok());
  CHECK(judge(sum, c, lm).outcome == Outcome::kFail);

  nlohmann::json unknown = prefer;
  unknown["score"] = "median";
  CHECK_THAT(compile_error("mft", {{"inputs", {"x"}}, {"expect", unknown}}),
             Catch::Contains("tests.t.expect.score: expected one of mean, sum; got 'median'"));
  CHECK_THAT(compile_error(
                 "mft", {{"inputs", {"x"}}, {"expect", {{"label", "positive"}, {"score", "sum"}}}}),
             Catch::Contains("tests.t.expect.score: scores continuations"));
}

TEST_CASE("INV: the label must not change; threshold bounds the probability move",
          "[assertions][judge]") {
  const auto t = compile_ok("inv", {{"inputs", {"The food is good.", "Nothing to negate"}},
                                    {"perturb", {{"kind", "typos"}}}});
  auto cases = generate_cases(t);
  REQUIRE(cases.is_ok());
  REQUIRE(cases->cases.size() == 2);
  const TestCase& c = cases->cases[0];
  REQUIRE(c.perturbed.has_value());
  CHECK(*c.perturbed != c.input);
  const ModelOutput before = sentiment(0.1f, 0.9f);
  const ModelOutput same = sentiment(0.4f, 0.6f);
  const ModelOutput flipped = sentiment(0.6f, 0.4f);
  CHECK(judge(t, c, before, &same).outcome == Outcome::kPass);
  const Verdict v = judge(t, c, before, &flipped);
  CHECK(v.outcome == Outcome::kFail);
  CHECK_THAT(v.reason, Catch::Contains("prediction changed: positive (0.900) -> negative (0.600)"));
  CHECK_FALSE(judge_case(t, c, CaseOutputs{&before, nullptr, nullptr, nullptr}).is_ok());

  const auto strict = compile_ok(
      "inv", {{"inputs", {"a b"}}, {"perturb", {{"kind", "typos"}}}, {"threshold", 0.1}});
  CHECK(judge(strict, c, before, &same).outcome == Outcome::kFail);
  const ModelOutput close = sentiment(0.15f, 0.85f);
  CHECK(judge(strict, c, before, &close).outcome == Outcome::kPass);
}

TEST_CASE("INV/DIR skip inputs the perturbation cannot change", "[assertions][test]") {
  const auto t =
      compile_ok("dir", {{"inputs", {"The food is good.", "I loved it.", "It was fine."}},
                         {"perturb", {{"kind", "negation"}}},
                         {"direction", {{"label", "positive"}, {"change", "decrease"}}}});
  auto cases = generate_cases(t);
  REQUIRE(cases.is_ok());
  CHECK(cases->not_applicable == 1);
  REQUIRE(cases->cases.size() == 2);
  CHECK(*cases->cases[0].perturbed == "The food is not good.");
  CHECK(*cases->cases[1].perturbed == "It was not fine.");
  CHECK(cases->cases[1].id == "t/2");  // ids keep the input's position
}

TEST_CASE("DIR: label direction with tolerance, confidence direction, expect after",
          "[assertions][judge]") {
  const TestCase c{.id = "t/0",
                   .input = "x",
                   .perturbed = "y",
                   .source = "inputs[0]",
                   .fills = {},
                   .prefer = {},
                   .over = {}};
  const auto down = compile_ok(
      "dir", {{"inputs", {"x"}},
              {"perturb", {{"kind", "negation"}}},
              {"direction", {{"label", "positive"}, {"change", "decrease"}, {"tolerance", 0.05}}}});
  const ModelOutput before = sentiment(0.3f, 0.7f);
  const ModelOutput lower = sentiment(0.6f, 0.4f);
  const ModelOutput slightly_higher = sentiment(0.27f, 0.73f);
  const ModelOutput higher = sentiment(0.1f, 0.9f);
  CHECK(judge(down, c, before, &lower).outcome == Outcome::kPass);
  CHECK(judge(down, c, before, &slightly_higher).outcome == Outcome::kPass);
  const Verdict up = judge(down, c, before, &higher);
  CHECK(up.outcome == Outcome::kFail);
  CHECK_THAT(up.reason, Catch::Contains("p(positive) 0.700 -> 0.900, expected a decrease"));

  const auto sure = compile_ok("dir", {{"inputs", {"x"}},
                                       {"perturb", {{"kind", "typos"}}},
                                       {"direction", {{"confidence", "increase"}}}});
  CHECK(judge(sure, c, before, &higher).outcome == Outcome::kPass);
  CHECK(judge(sure, c, before, &lower).outcome == Outcome::kFail);  // p(positive) fell

  const auto flips = compile_ok("dir", {{"inputs", {"x"}},
                                        {"perturb", {{"kind", "negation"}}},
                                        {"expect", {{"label", "negative"}}}});
  CHECK(judge(flips, c, before, &lower).outcome == Outcome::kPass);
  const Verdict stays = judge(flips, c, before, &higher);
  CHECK(stays.outcome == Outcome::kFail);
  CHECK_THAT(stays.reason, Catch::StartsWith("after perturbation: predicted positive"));

  // Both: the direction is checked first, then the expectation on the perturbed output.
  const auto both =
      compile_ok("dir", {{"inputs", {"x"}},
                         {"perturb", {{"kind", "negation"}}},
                         {"direction", {{"label", "positive"}, {"change", "decrease"}}},
                         {"expect", {{"label", "negative"}}}});
  CHECK(judge(both, c, before, &lower).outcome == Outcome::kPass);
  const ModelOutput barely_lower = sentiment(0.35f, 0.65f);
  const Verdict not_flipped = judge(both, c, before, &barely_lower);
  CHECK(not_flipped.outcome == Outcome::kFail);
  CHECK_THAT(not_flipped.reason, Catch::StartsWith("after perturbation"));
  CHECK_THAT(judge(both, c, before, &higher).reason, Catch::Contains("expected a decrease"));
}

TEST_CASE("regression: parent counts only failures the parent does not share",
          "[assertions][judge]") {
  const auto t = compile_ok(
      "mft", {{"inputs", {"x"}}, {"expect", {{"label", "positive"}}}, {"regression", "parent"}});
  const TestCase c{.id = "t/0",
                   .input = "x",
                   .perturbed = {},
                   .source = "inputs[0]",
                   .fills = {},
                   .prefer = {},
                   .over = {}};
  const ModelOutput good = sentiment(0.1f, 0.9f);
  const ModelOutput bad = sentiment(0.9f, 0.1f);
  auto v = [&](const ModelOutput& child, const ModelOutput* parent) {
    return judge_case(t, c, CaseOutputs{&child, nullptr, parent, nullptr});
  };
  CHECK(v(good, nullptr)->outcome == Outcome::kPass);  // a passing child needs no parent
  CHECK_FALSE(v(bad, nullptr).is_ok());
  CHECK(v(bad, &good)->outcome == Outcome::kFail);
  CHECK_THAT(v(bad, &good)->reason, Catch::StartsWith("regression"));
  CHECK(v(bad, &bad)->outcome == Outcome::kInherited);
}

TEST_CASE("summaries count failures and keep the first examples", "[assertions][judge]") {
  const auto t =
      compile_ok("inv", {{"inputs", {"ab", "cd", "ef", "gh"}}, {"perturb", {{"kind", "typos"}}}});
  auto cases = generate_cases(t);
  REQUIRE(cases->cases.size() == 4);
  const std::vector<Verdict> verdicts = {{Outcome::kPass, ""},
                                         {Outcome::kFail, "flip 1"},
                                         {Outcome::kInherited, "old"},
                                         {Outcome::kFail, "flip 2"}};
  const TestResult r = summarize(t, "review", *cases, verdicts, 1);
  CHECK(r.model == "review");
  CHECK(r.type == "inv");
  CHECK(r.cases == 4);
  CHECK(r.failures == 2);
  CHECK(r.inherited == 1);
  CHECK(r.failure_rate == Approx(0.5));
  CHECK_FALSE(r.passed);  // 0.5 > 0.25
  REQUIRE(r.examples.size() == 1);
  CHECK(r.examples[0].case_id == "t/1");
  CHECK(r.examples[0].reason == "flip 1");
  CHECK_FALSE(r.examples[0].perturbed.empty());
  const TestResult ok = summarize(t, "review", *cases, {{}, {}, {}, {Outcome::kFail, "x"}});
  CHECK(ok.passed);                                      // 0.25 <= 0.25
  CHECK_FALSE(summarize(t, "m", CaseSet{}, {}).passed);  // nothing judged
}

TEST_CASE("dataset inputs: a seeded sample of the texts the evaluator reads",
          "[assertions][test]") {
  const auto t = compile_ok("inv", {{"data", {{"dataset", "reviews"}, {"max_cases", 3}}},
                                    {"perturb", {{"kind", "case"}, {"mode", "upper"}}}});
  REQUIRE(t.data.has_value());
  CHECK(t.data->dataset == "reviews");
  CHECK_FALSE(generate_cases(t).is_ok());
  const std::vector<std::string> texts = {"one", "two", "three", "four", "five", "six"};
  auto cases = generate_cases(t, texts);
  REQUIRE(cases.is_ok());
  REQUIRE(cases->cases.size() == 3);
  for (const TestCase& c : cases->cases) {
    CHECK_THAT(c.source, Catch::StartsWith("data reviews["));
    CHECK(*c.perturbed == to_upper(c.input));
  }
}

TEST_CASE("test-local lexicons, lists or files", "[assertions][test]") {
  const auto t = compile_ok("mft", {{"template", "I like {fruit}."},
                                    {"lexicons", {{"fruit", {"apples", "pears"}}}},
                                    {"expect", {{"label", "positive"}}}});
  auto cases = generate_cases(t);
  REQUIRE(cases->cases.size() == 2);
  CHECK(cases->cases[1].input == "I like pears.");
  CHECK_THAT(compile_error("mft", {{"template", "{fruit}"},
                                   {"lexicons", {{"fruit", "no_such_file.txt"}}},
                                   {"expect", {{"label", "x"}}}}),
             Catch::Contains("tests.t.lexicons.fruit") && Catch::Contains("/tmp/no_such_file.txt"));
}

TEST_CASE("test spec errors name the test, the key and the column", "[assertions][test]") {
  CHECK_THAT(compile_error(
                 "mft", {{"template", "The {nun} is good."}, {"expect", {{"label", "positive"}}}}),
             Catch::Contains("tests.t.template, column 5: unknown lexicon 'nun'"));
  CHECK_THAT(compile_error("mft", {{"templates", {"ok", "The {noun is"}},
                                   {"expect", {{"label", "positive"}}}}),
             Catch::Contains("tests.t.templates[1], column 5: '{' is not closed"));
  CHECK_THAT(compile_error("mft", {{"template", ""}, {"expect", {{"label", "positive"}}}}),
             Catch::Contains("the template is empty"));
  CHECK_THAT(
      compile_error("mft", {{"inputs", {"x"}}, {"expect", {{"predicate", "p.positive >"}}}}),
      Catch::Contains("tests.t.expect.predicate: the expression does not parse at column 13"));
  CHECK_THAT(compile_error("mft", {{"inputs", {"x"}}}),
             Catch::Contains("tests.t.expect: is required"));
  CHECK_THAT(compile_error("mft", {{"expect", {{"label", "x"}}}}),
             Catch::Contains("gives no inputs"));
  CHECK_THAT(compile_error("inv", {{"inputs", {"x"}}}),
             Catch::Contains("tests.t.perturb: is required"));
  CHECK_THAT(compile_error("dir", {{"inputs", {"x"}}, {"perturb", {{"kind", "typos"}}}}),
             Catch::Contains("needs `direction` or `expect`"));
  CHECK_THAT(compile_error("xyz", {{"inputs", {"x"}}}), Catch::Contains("unknown test type 'xyz'"));
  CHECK_THAT(
      compile_error("mft", {{"inputs", {"x"}}, {"expect", {{"label", "a"}}}, {"maxcases", 3}}),
      Catch::Contains("tests.t.maxcases: unknown key"));
  CHECK_THAT(
      compile_error("mft", {{"inputs", {"x"}}, {"expect", {{"label", "a"}, {"not_label", "b"}}}}),
      Catch::Contains("exactly one of"));
  CHECK_THAT(
      compile_error("dir", {{"inputs", {"x"}},
                            {"perturb", {{"kind", "typos"}}},
                            {"direction", {{"label", "a"}, {"change", "up"}}}}),
      Catch::Contains("tests.t.direction.change: expected one of increase, decrease; got 'up'"));
  CHECK_THAT(
      compile_error("mft", {{"inputs", {"x"}}, {"expect", {{"label", "a"}}}, {"max_cases", -1}}),
      Catch::Contains("tests.t.max_cases"));
  CHECK_THAT(
      compile_error("inv",
                    {{"inputs", {"x"}}, {"perturb", {{"kind", "typos"}}}, {"regression", "child"}}),
      Catch::Contains("tests.t.regression: expected one of parent"));
}

namespace {

// A stand-in sentiment model that only looks for positive adjectives: blind to negation.
ModelOutput keyword_model(const std::string& text) {
  static const LexiconSet lexicons = LexiconSet::builtin();
  for (const std::string& adjective : *lexicons.find("pos_adj"))
    if (text.find(adjective) != std::string::npos) return sentiment(0.1f, 0.9f);
  return sentiment(0.8f, 0.2f);
}

}  // namespace

TEST_CASE("the pieces compose: compile, generate, run, judge, summarise", "[assertions][test]") {
  const auto mft = compile_ok("mft", {{"template", "The {noun} is {pos_adj}."},
                                      {"max_cases", 30},
                                      {"expect", {{"label", "positive"}}}});
  const auto dir =
      compile_ok("dir", {{"template", "The {noun} is {pos_adj}."},
                         {"max_cases", 30},
                         {"perturb", {{"kind", "negation"}}},
                         {"direction", {{"label", "positive"}, {"change", "decrease"}}},
                         {"expect", {{"label", "negative"}}}});
  std::vector<TestResult> results;
  for (const BehaviouralTest* test : {&mft, &dir}) {
    auto cases = generate_cases(*test);
    REQUIRE(cases.is_ok());
    REQUIRE(cases->cases.size() == 30);
    std::vector<Verdict> verdicts;
    for (const TestCase& c : cases->cases) {
      const ModelOutput original = keyword_model(c.input);
      const ModelOutput perturbed = keyword_model(c.perturbed.value_or(""));
      auto v = judge_case(*test, c, CaseOutputs{&original, &perturbed, nullptr, nullptr});
      REQUIRE(v.is_ok());
      verdicts.push_back(*v);
    }
    results.push_back(summarize(*test, "keywords", *cases, verdicts));
  }
  CHECK(results[0].passed);
  CHECK(results[0].failures == 0);
  // Negation does not move a keyword model: every DIR case fails, on its direction.
  CHECK_FALSE(results[1].passed);
  CHECK(results[1].failure_rate == 1.0);
  REQUIRE(results[1].examples.size() == 3);
  CHECK_THAT(results[1].examples[0].perturbed, Catch::Contains(" is not "));
}

TEST_CASE("a non-finite output fails MFT, INV and DIR cases, never passes",
          "[assertions][judge]") {
  const TestCase c{.id = "t/0",
                   .input = "x",
                   .perturbed = "y",
                   .source = "inputs[0]",
                   .fills = {},
                   .prefer = {},
                   .over = {}};
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const ModelOutput diverged = sentiment(nan, nan);
  const ModelOutput fine = sentiment(0.3f, 0.7f);
  auto fails_as_non_finite = [](const Verdict& v) {
    CHECK(v.outcome == Outcome::kFail);
    CHECK_THAT(v.reason, Catch::Contains("not finite") && Catch::Contains("p(negative) = nan"));
  };

  // With NaN probabilities the first label is "predicted" and NaN != 2 holds.
  const auto mft = compile_ok("mft", {{"inputs", {"x"}}, {"expect", {{"label", "negative"}}}});
  fails_as_non_finite(judge(mft, c, diverged));
  const auto predicate = compile_ok("mft", {{"inputs", {"x"}}, {"expect", {{"predicate", "p.positive != 2"}}}});
  fails_as_non_finite(judge(predicate, c, diverged));

  // NaN compares false with everything, so two NaN outputs "keep" their prediction.
  const auto inv = compile_ok("inv", {{"inputs", {"x"}}, {"perturb", {{"kind", "typos"}}}});
  fails_as_non_finite(judge(inv, c, diverged, &diverged));
  fails_as_non_finite(judge(inv, c, fine, &diverged));

  const auto dir = compile_ok(
      "dir", {{"inputs", {"x"}},
              {"perturb", {{"kind", "negation"}}},
              {"direction", {{"label", "positive"}, {"change", "decrease"}, {"tolerance", 0.05}}}});
  fails_as_non_finite(judge(dir, c, diverged, &diverged));
  const auto dir_expect = compile_ok(
      "dir", {{"inputs", {"x"}}, {"perturb", {{"kind", "negation"}}}, {"expect", {{"label", "negative"}}}});
  fails_as_non_finite(judge(dir_expect, c, diverged, &diverged));
  const ModelOutput infinite = sentiment(0.5f, std::numeric_limits<float>::infinity());
  const Verdict after = judge(dir, c, fine, &infinite);
  CHECK(after.outcome == Outcome::kFail);
  CHECK_THAT(after.reason, Catch::Contains("after perturbation, p(positive) = inf"));

  CHECK(non_finite_value(fine) == std::nullopt);
  const ModelOutput lm{{}, {}, {{"good", -1.5}, {"bad", std::nan("")}}};
  CHECK(non_finite_value(lm) == "log p(\"bad\") = nan");
}
