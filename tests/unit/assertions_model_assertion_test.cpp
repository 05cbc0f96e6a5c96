// Model assertions: each kind's severity on synthetic outputs, expression variables
// (p.<label>, parent.*, margin, entropy, length, ...), and errors with their location.
#include <catch2/catch.hpp>
#include <cmath>

#include "assertions/expression.h"
#include "assertions/model_assertion.h"

using namespace scion;
using namespace scion::assertions;

namespace {

spec::AssertionSpec make_spec(std::string kind, nlohmann::json body) {
  return spec::AssertionSpec{.name = "check",
                             .location = {"scion.yaml", 21, 5},
                             .kind = std::move(kind),
                             .models = {"review"},
                             .body = std::move(body)};
}

ModelAssertion compile_ok(std::string kind, nlohmann::json body) {
  auto a =
      ModelAssertion::compile(make_spec(std::move(kind), std::move(body)), LexiconSet::builtin());
  INFO((a.is_ok() ? std::string() : a.status().message()));
  REQUIRE(a.is_ok());
  return *a;
}

std::string compile_error(std::string kind, nlohmann::json body) {
  auto a =
      ModelAssertion::compile(make_spec(std::move(kind), std::move(body)), LexiconSet::builtin());
  REQUIRE_FALSE(a.is_ok());
  CHECK(a.status().code() == StatusCode::kSpecError);
  CHECK_THAT(a.status().message(), Catch::StartsWith("scion.yaml:21:5: assertions.check"));
  return a.status().message();
}

ModelOutput three(float neg, float neu, float pos) {
  return ModelOutput{{"negative", "neutral", "positive"}, {neg, neu, pos}, {}};
}

double severity(const ModelAssertion& a, const AssertionInput& in) {
  auto s = a.severity(in);
  INFO((s.is_ok() ? std::string() : s.status().message()));
  REQUIRE(s.is_ok());
  return *s;
}

}  // namespace

TEST_CASE("derived quantities of an output", "[assertions][output]") {
  const ModelOutput o = three(0.2f, 0.3f, 0.5f);
  CHECK(predicted_index(o) == 2);
  CHECK(predicted_label(o) == "positive");
  CHECK(confidence(o) == Approx(0.5));
  CHECK(margin(o) == Approx(0.2));
  CHECK(entropy(o) == Approx(-(0.2 * std::log(0.2) + 0.3 * std::log(0.3) + 0.5 * std::log(0.5))));
  CHECK(entropy(ModelOutput{{"a", "b"}, {1.0f, 0.0f}, {}}) == 0.0);
  CHECK(predicted_index(ModelOutput{{"a", "b"}, {0.5f, 0.5f}, {}}) == 0);  // first on ties
  CHECK(predicted_index(ModelOutput{}) == -1);
  CHECK_FALSE(probability_of(o, "other").has_value());
}

TEST_CASE("low_confidence: severity is the gap below the threshold", "[assertions][assertion]") {
  const auto a = compile_ok("low_confidence", {{"threshold", 0.7}});
  const ModelOutput sure = three(0.05f, 0.05f, 0.9f);
  const ModelOutput unsure = three(0.3f, 0.2f, 0.5f);
  const ModelOutput lost = three(0.3f, 0.3f, 0.4f);
  CHECK(severity(a, {"x", &sure}) == 0.0);
  CHECK(severity(a, {"x", &unsure}) == Approx(0.2));
  CHECK(severity(a, {"x", &lost}) == Approx(0.3));
  CHECK_FALSE(a.needs_parent());
  CHECK(a.perturbation() == nullptr);
  CHECK(compile_ok("low_confidence", nlohmann::json::object()).severity({"x", &unsure}).value() ==
        Approx(0.1));
}

TEST_CASE("parent_disagreement: by label name, parent confidence or probability gap",
          "[assertions][assertion]") {
  const auto by_confidence = compile_ok("parent_disagreement", nlohmann::json::object());
  const auto by_gap = compile_ok("parent_disagreement", {{"severity", "probability_gap"}});
  CHECK(by_confidence.needs_parent());
  const ModelOutput child = three(0.1f, 0.2f, 0.7f);
  // The parent has the labels in another order: agreement is by name, not index.
  const ModelOutput parent_agrees{{"positive", "negative"}, {0.8f, 0.2f}, {}};
  const ModelOutput parent_disagrees = three(0.6f, 0.3f, 0.1f);
  CHECK(severity(by_confidence, {"x", &child, &parent_agrees}) == 0.0);
  CHECK(severity(by_confidence, {"x", &child, &parent_disagrees}) == Approx(0.6));
  CHECK(severity(by_gap, {"x", &child, &parent_disagrees}) == Approx(0.7 - 0.1));
  CHECK_FALSE(by_confidence.severity({"x", &child}).is_ok());
}

TEST_CASE("perturbation_flip: the perturbed prediction's margin over the old label",
          "[assertions][assertion]") {
  const auto a = compile_ok("perturbation_flip", {{"perturb", {{"kind", "typos"}, {"count", 2}}}});
  REQUIRE(a.perturbation() != nullptr);
  CHECK(a.perturbation()->apply("The service was great", 1).has_value());
  const ModelOutput before = three(0.1f, 0.2f, 0.7f);
  const ModelOutput kept = three(0.2f, 0.2f, 0.6f);
  const ModelOutput flipped = three(0.55f, 0.1f, 0.35f);
  CHECK(severity(a, {"x", &before, nullptr, &kept}) == 0.0);
  CHECK(severity(a, {"x", &before, nullptr, &flipped}) == Approx(0.2));
  CHECK_FALSE(a.severity({"x", &before}).is_ok());
}

TEST_CASE("allowed_outputs: matching inputs must get an allowed label", "[assertions][assertion]") {
  const auto a = compile_ok(
      "allowed_outputs",
      {{"pattern", "\\brefund\\b"}, {"labels", {"negative", "neutral"}}, {"ignore_case", true}});
  const ModelOutput positive = three(0.1f, 0.1f, 0.8f);
  const ModelOutput negative = three(0.8f, 0.1f, 0.1f);
  CHECK(severity(a, {"I want a REFUND now", &positive}) == Approx(0.8));
  CHECK(severity(a, {"I want a refund now", &negative}) == 0.0);
  CHECK(severity(a, {"refunds are easy", &positive}) == 0.0);  // no whole-word match
  CHECK_THAT(
      compile_error("allowed_outputs", {{"pattern", "(unclosed"}, {"labels", "x"}}),
      Catch::Contains("assertions.check.pattern: \"(unclosed\" is not a valid regular expression"));
  CHECK_THAT(compile_error("allowed_outputs", {{"pattern", "x"}}),
             Catch::Contains("assertions.check.labels: is required"));
}

TEST_CASE("expression: the formula's value over named quantities is the severity",
          "[assertions][assertion]") {
  const auto a = compile_ok("expression",
                            {{"expression", "(confidence < 0.6) * (1 - margin) + (length > 10)"}});
  const ModelOutput unsure = three(0.3f, 0.2f, 0.5f);
  const ModelOutput sure = three(0.05f, 0.05f, 0.9f);
  CHECK(severity(a, {"short", &unsure}) == Approx(0.8));
  CHECK(severity(a, {"short", &sure}) == 0.0);
  CHECK(severity(a, {"a much longer input", &sure}) == 1.0);
  CHECK_FALSE(a.needs_parent());

  const auto drift =
      compile_ok("expression", {{"expression", "abs(p.positive - parent.p.positive) - 0.1"}});
  CHECK(drift.needs_parent());
  const ModelOutput parent = three(0.2f, 0.2f, 0.6f);
  CHECK(severity(drift, {"x", &sure, &parent}) == Approx(0.2));
  CHECK(severity(drift, {"x", &parent, &parent}) == 0.0);  // negative values clamp to 0

  const auto index = compile_ok(
      "expression", {{"expression", "label_index == 2 && num_labels == 3 && entropy > 0"}});
  CHECK(severity(index, {"x", &unsure}) == 1.0);

  // A label the model does not have names the variable and what is available.
  const auto missing = compile_ok("expression", {{"expression", "p.joy"}});
  auto s = missing.severity({"x", &sure});
  REQUIRE_FALSE(s.is_ok());
  CHECK_THAT(s.status().message(), Catch::Contains("'p.joy'") && Catch::Contains("p.positive"));
}

TEST_CASE("expression with continuations: lm.<name> is the named text's log-likelihood",
          "[assertions][assertion]") {
  const ModelAssertion a = compile_ok(
      "expression", {{"expression", "(lm.woof - lm.meow) * (length > 3)"},
                     {"continuations", {{"meow", " meow"}, {"woof", " woof"}}}});
  CHECK(a.scores_continuations());
  CHECK(a.continuations() ==
        std::vector<std::pair<std::string, std::string>>{{"meow", " meow"}, {"woof", " woof"}});
  CHECK_FALSE(a.needs_parent());
  // Scores are keyed by the continuation's text; the assertion binds them to its names.
  ModelOutput lm;
  lm.continuation_logprobs = {{" meow", -1.0}, {" woof", -4.0}, {" moo", 0.0}};
  CHECK(severity(a, {"the cat says", &lm, nullptr, nullptr}) == 0.0);
  lm.continuation_logprobs[" woof"] = -0.25;
  CHECK(severity(a, {"the cat says", &lm, nullptr, nullptr}) == Approx(0.75));
  CHECK(severity(a, {"cat", &lm, nullptr, nullptr}) == 0.0);  // length 3
  lm.continuation_logprobs.erase(" meow");
  auto missing = a.severity({"the cat says", &lm, nullptr, nullptr});
  REQUIRE_FALSE(missing.is_ok());
  CHECK_THAT(missing.status().message(), Catch::Contains("no score for continuation 'meow'"));

  const ModelAssertion drop = compile_ok(
      "expression", {{"expression", "parent.lm.meow - lm.meow - 1"}, {"continuations", {{"meow", " meow"}}}});
  CHECK(drop.needs_parent());
  ModelOutput child, parent;
  child.continuation_logprobs = {{" meow", -5.0}};
  parent.continuation_logprobs = {{" meow", -1.5}};
  CHECK(severity(drop, {"the cat says", &child, &parent, nullptr}) == Approx(2.5));
  // Classifier assertions do not score continuations.
  CHECK_FALSE(compile_ok("low_confidence", nlohmann::json::object()).scores_continuations());
}

TEST_CASE("continuations: errors say what is wrong and where", "[assertions][assertion]") {
  CHECK_THAT(compile_error("expression", {{"expression", "lm.yes > lm.no"}}),
             Catch::Contains("assertions.check.expression: uses lm.no, but the assertion names no "
                             "continuations; add continuations: {no: \" text\"}"));
  CHECK_THAT(compile_error("expression", {{"expression", "lm.yes - lm.maybe"},
                                          {"continuations", {{"yes", " yes"}, {"no", " no"}}}}),
             Catch::Contains("uses lm.maybe, but continuations: names no 'maybe' (it names no, yes)"));
  CHECK_THAT(compile_error("expression", {{"expression", "lm.yes - confidence"},
                                          {"continuations", {{"yes", " yes"}}}}),
             Catch::Contains("uses 'confidence', which a language model does not have"));
  CHECK_THAT(compile_error("expression", {{"expression", "lm.yes"}, {"continuations", {" yes"}}}),
             Catch::Contains("assertions.check.continuations: expected a mapping"));
  CHECK_THAT(compile_error("expression", {{"expression", "lm.yes"}, {"continuations", {{"yes", ""}}}}),
             Catch::Contains("assertions.check.continuations.yes: expected the non-empty text"));
  CHECK_THAT(compile_error("expression", {{"expression", "1"}, {"continuations", {{"a b", "x"}}}}),
             Catch::Contains("continuations.a b: is not a name"));
  CHECK_THAT(compile_error("low_confidence", {{"continuations", {{"yes", " yes"}}}}),
             Catch::Contains("continuations"));
}

TEST_CASE("expressions that do not parse name the assertion and the column",
          "[assertions][assertion]") {
  const std::string m = compile_error("expression", {{"expression", "confidence < (0.5 * margin"}});
  CHECK_THAT(
      m, Catch::Contains("assertions.check.expression: the expression does not parse at column"));
  CHECK_THAT(
      compile_error("expression", {{"expression", "p.positive >"}}),
      Catch::Contains("at column 13") && Catch::Contains("\n    p.positive >\n                ^"));
  CHECK_THAT(compile_error("expression", {{"expression", "confidence $ 2"}}),
             Catch::Contains("at column 12"));
  CHECK_THAT(compile_error("expression", {{"expression", " "}}),
             Catch::Contains("the expression is empty"));
  CHECK_THAT(compile_error("expression", nlohmann::json::object()),
             Catch::Contains("assertions.check.expression: is required"));
  CHECK_THAT(compile_error("sometimes", nlohmann::json::object()),
             Catch::Contains("unknown assertion kind 'sometimes'"));
  CHECK_THAT(compile_error("low_confidence", {{"threshold", 2}}),
             Catch::Contains("assertions.check.threshold: must be in (0, 1]"));
  CHECK_THAT(compile_error("perturbation_flip", nlohmann::json::object()),
             Catch::Contains("assertions.check.perturb: is required"));
}

TEST_CASE("an Expression copies and reports its variables", "[assertions][expression]") {
  auto e = Expression::compile("parent.p.pos + p.pos * 2", "here");
  REQUIRE(e.is_ok());
  CHECK(e->variables() == std::vector<std::string>{"p.pos", "parent.p.pos"});
  const Expression copy = *e;
  VariableMap values{{"p.pos", 1.0}, {"parent.p.pos", 0.5}};
  CHECK(copy.evaluate(values).value() == Approx(2.5));
  CHECK(e->evaluate(values).value() == Approx(2.5));
}

TEST_CASE("a non-finite output violates every kind of assertion", "[assertions][model]") {
  const float nan = std::nanf("");
  const ModelOutput diverged = three(nan, nan, nan);
  const ModelOutput fine = three(0.1f, 0.1f, 0.8f);
  // Before the check each of these saw NaN as no violation (severity 0).
  CHECK(severity(compile_ok("low_confidence", {{"threshold", 0.6}}), {"x", &diverged}) == 1.0);
  CHECK(severity(compile_ok("expression", {{"expression", "p.positive - 0.5"}}), {"x", &diverged}) == 1.0);
  const auto flip = compile_ok("perturbation_flip", {{"perturb", {{"kind", "typos"}}}});
  CHECK(severity(flip, {"x", &fine, nullptr, &diverged}) == 1.0);
  CHECK(severity(compile_ok("low_confidence", {{"threshold", 0.6}}), {"x", &fine}) == 0.0);
}
