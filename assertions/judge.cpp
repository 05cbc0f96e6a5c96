#include "assertions/judge.h"

#include <fmt/format.h>

#include <algorithm>
#include <cassert>
#include <cmath>
#include <optional>

namespace scion::assertions {
namespace {

struct Check {
  bool passed = true;
  std::string reason;
};

std::string describe(const ModelOutput& o) {
  if (o.task == spec::HeadTask::kRegression) return prediction(o);
  return fmt::format("{} ({:.3f})", prediction(o), confidence(o));
}

// What the labels of an expectation are matched against: the predicted label, a
// multi-label head's predicted labels, a token classifier's tags.
std::vector<std::string> answered_labels(const ModelOutput& o) {
  switch (o.task) {
    case spec::HeadTask::kMultiLabel:
      return predicted_labels(o);
    case spec::HeadTask::kTokenClassification:
      return predicted_tags(o);
    default:
      return {predicted_label(o)};
  }
}

Result<double> probability(const BehaviouralTest& test, const ModelOutput& output,
                           const std::string& label) {
  auto p = probability_of(output, label);
  if (!p)
    return invalid_argument(
        fmt::format("{}: label '{}' is not an output of this model; its labels are: {}",
                    test.origin, label, fmt::join(output.labels, ", ")));
  return *p;
}

Result<Check> check_labels(const BehaviouralTest& test, const ModelOutput& output,
                           bool must_be_in) {
  for (const std::string& label : test.expect.labels)
    if (std::find(output.labels.begin(), output.labels.end(), label) == output.labels.end())
      return invalid_argument(
          fmt::format("{}: expect names label '{}', which this model does not have; its "
                      "labels are: {}",
                      test.origin, label, fmt::join(output.labels, ", ")));
  bool in = false;
  for (const std::string& got : answered_labels(output))
    in = in || std::find(test.expect.labels.begin(), test.expect.labels.end(), got) !=
                   test.expect.labels.end();
  if (in == must_be_in) return Check{true, fmt::format("predicted {}", describe(output))};
  return Check{false, fmt::format("predicted {}, expected {}{}", describe(output),
                                  must_be_in ? "" : "not ", fmt::join(test.expect.labels, " or "))};
}

Result<Check> check_predicate(const BehaviouralTest& test, const TestCase& c,
                              const ModelOutput& output, const ModelOutput* parent) {
  VariableMap values;
  add_output_variables(output, "", &values);
  if (parent) add_output_variables(*parent, "parent.", &values);
  values["length"] = static_cast<double>(c.input.size());
  auto v = test.expect.predicate->evaluate(values);
  if (!v) return v.status();
  if (*v != 0.0 && !std::isnan(*v))
    return Check{true, fmt::format("{} holds", test.expect.predicate->text())};
  return Check{false, fmt::format("{} is false (predicted {})", test.expect.predicate->text(),
                                  describe(output))};
}

// A continuation's score under `test`: its total log-likelihood, or that total per token.
Result<double> continuation_score(const BehaviouralTest& test, const TestCase& c,
                                  const ModelOutput& output, const std::string& continuation) {
  auto it = output.continuation_logprobs.find(continuation);
  if (it == output.continuation_logprobs.end())
    return invalid_argument(
        fmt::format("{}: case {} has no score for the continuation \"{}\"; the evaluator must "
                    "score both `prefer` and `over`",
                    test.origin, c.id, continuation));
  if (test.expect.score == Expectation::Score::kSum) return it->second;
  auto tokens = output.continuation_tokens.find(continuation);
  if (tokens == output.continuation_tokens.end() || tokens->second == 0)
    return invalid_argument(
        fmt::format("{}: case {} has no token count for the continuation \"{}\"; the evaluator "
                    "must count the tokens of both `prefer` and `over` for score: mean",
                    test.origin, c.id, continuation));
  return it->second / static_cast<double>(tokens->second);
}

Result<Check> check_preference(const BehaviouralTest& test, const TestCase& c,
                               const ModelOutput& output) {
  auto prefer = continuation_score(test, c, output, c.prefer);
  if (!prefer) return prefer.status();
  auto over = continuation_score(test, c, output, c.over);
  if (!over) return over.status();
  const bool ok = *prefer > *over + test.expect.margin;
  // "log p" for totals, "mean log p" for per-token scores.
  const char* score = test.expect.score == Expectation::Score::kSum ? "log p" : "mean log p";
  return Check{
      ok, fmt::format(
              "{}(\"{}\") = {:.3f} {} {}(\"{}\") = {:.3f}{}", score, c.prefer, *prefer,
              ok ? ">" : "<=", score, c.over, *over,
              test.expect.margin != 0.0 ? fmt::format(" + margin {}", test.expect.margin) : "")};
}

Result<Check> check_expectation(const BehaviouralTest& test, const TestCase& c,
                                const ModelOutput& output, const ModelOutput* parent) {
  switch (test.expect.kind) {
    case Expectation::Kind::kLabel:
      return check_labels(test, output, true);
    case Expectation::Kind::kNotLabel:
      return check_labels(test, output, false);
    case Expectation::Kind::kPredicate:
      return check_predicate(test, c, output, parent);
    case Expectation::Kind::kPrefer:
      return check_preference(test, c, output);
    case Expectation::Kind::kNone:
      break;
  }
  return Check{};
}

// A regression head keeps its prediction when no value moves more than the threshold.
Check check_value_invariance(const BehaviouralTest& test, const ModelOutput& original,
                             const ModelOutput& perturbed) {
  for (std::size_t i = 0; i < original.values.size() && i < perturbed.values.size(); ++i) {
    const double change = std::fabs(perturbed.values[i] - original.values[i]);
    if (change > *test.threshold)
      return Check{false, fmt::format("{} moved {:.3f} -> {:.3f}, more than threshold {}",
                                      i < original.labels.size() ? original.labels[i] : "value",
                                      original.values[i], perturbed.values[i], *test.threshold)};
  }
  return Check{true,
               fmt::format("values kept within {}: {}", *test.threshold, prediction(original))};
}

Result<Check> check_invariance(const BehaviouralTest& test, const ModelOutput& original,
                               const ModelOutput& perturbed) {
  if (original.task == spec::HeadTask::kRegression)
    return check_value_invariance(test, original, perturbed);
  const std::string before = prediction(original);
  const std::string after = prediction(perturbed);
  if (before != after)
    return Check{false, fmt::format("prediction changed: {} -> {}", describe(original),
                                    describe(perturbed))};
  if (test.threshold && original.task == spec::HeadTask::kMultiLabel) {
    for (std::size_t i = 0; i < original.probabilities.size() && i < perturbed.probabilities.size();
         ++i)
      if (std::fabs(perturbed.probabilities[i] - original.probabilities[i]) > *test.threshold)
        return Check{false, fmt::format("p({}) moved {:.3f} -> {:.3f}, more than threshold {}",
                                        original.labels[i], original.probabilities[i],
                                        perturbed.probabilities[i], *test.threshold)};
  } else if (test.threshold && original.task == spec::HeadTask::kClassification) {
    auto p_before = probability(test, original, before);
    auto p_after = probability(test, perturbed, before);
    if (!p_before) return p_before.status();
    if (!p_after) return p_after.status();
    const double change = std::fabs(*p_after - *p_before);
    if (change > *test.threshold)
      return Check{false, fmt::format("p({}) moved {:.3f} -> {:.3f}, more than threshold {}",
                                      before, *p_before, *p_after, *test.threshold)};
  }
  return Check{true, fmt::format("prediction kept: {}", before)};
}

Result<Check> check_direction(const BehaviouralTest& test, const ModelOutput& original,
                              const ModelOutput& perturbed) {
  const Direction& d = *test.direction;
  const std::string label =
      d.quantity == Direction::Quantity::kLabel ? d.label : predicted_label(original);
  const bool values = original.task == spec::HeadTask::kRegression;
  const auto quantity = [&](const ModelOutput& o) -> Result<double> {
    if (!values) return probability(test, o, label);
    if (auto v = value_of(o, label)) return *v;
    return invalid_argument(
        fmt::format("{}: direction names '{}', which is not an output of "
                    "this regression head; its outputs are: {}",
                    test.origin, label, fmt::join(o.labels, ", ")));
  };
  auto before = quantity(original);
  auto after = quantity(perturbed);
  if (!before) return before.status();
  if (!after) return after.status();
  const double delta = *after - *before;
  const bool ok = d.increase ? delta >= -d.tolerance : delta <= d.tolerance;
  return Check{
      ok, fmt::format("{}({}) {:.3f} -> {:.3f}, expected {}{}", values ? "" : "p", label, *before,
                      *after, d.increase ? "an increase" : "a decrease",
                      d.tolerance > 0.0 ? fmt::format(" (tolerance {})", d.tolerance) : "")};
}

// A failed check when an output the test reads is not finite: every comparison with NaN
// is false, so an INV of two NaN outputs would keep its "prediction" and pass.
std::optional<Check> non_finite_check(const ModelOutput& original, const ModelOutput* perturbed) {
  for (const ModelOutput* output : {&original, perturbed}) {
    if (output == nullptr) continue;
    if (auto value = non_finite_value(*output))
      return Check{false, fmt::format("the model's output is not finite ({}{}): its parameters "
                                      "have diverged; retrain it with a lower learning rate",
                                      output == perturbed ? "after perturbation, " : "", *value)};
  }
  return std::nullopt;
}

// The verdict for one model, ignoring any parent.
Result<Check> judge_one(const BehaviouralTest& test, const TestCase& c, const ModelOutput& original,
                        const ModelOutput* perturbed, const ModelOutput* parent) {
  if (auto failed = non_finite_check(original, test.type == TestType::kMft ? nullptr : perturbed))
    return *failed;
  switch (test.type) {
    case TestType::kMft:
      return check_expectation(test, c, original, parent);
    case TestType::kInv:
      return check_invariance(test, original, *perturbed);
    case TestType::kDir: {
      if (test.direction) {
        auto moved = check_direction(test, original, *perturbed);
        if (!moved || !moved->passed || test.expect.kind == Expectation::Kind::kNone) return moved;
      }
      auto met = check_expectation(test, c, *perturbed, nullptr);
      if (met && !met->passed) met->reason = "after perturbation: " + met->reason;
      return met;
    }
  }
  return Check{};
}

}  // namespace

Result<Verdict> judge_case(const BehaviouralTest& test, const TestCase& c,
                           const CaseOutputs& outputs) {
  const bool needs_perturbed = test.type != TestType::kMft;
  if (outputs.original == nullptr || (needs_perturbed && outputs.perturbed == nullptr))
    return invalid_argument(fmt::format("{}: case {} needs the model's output on the {} input",
                                        test.origin, c.id,
                                        outputs.original == nullptr ? "original" : "perturbed"));
  auto child = judge_one(test, c, *outputs.original, outputs.perturbed, outputs.parent);
  if (!child) return child.status();
  if (child->passed) return Verdict{Outcome::kPass, child->reason};
  if (!test.regression_parent) return Verdict{Outcome::kFail, child->reason};

  if (outputs.parent == nullptr || (needs_perturbed && outputs.parent_perturbed == nullptr))
    return invalid_argument(fmt::format(
        "{}: has `regression: parent`; case {} needs the parent's outputs", test.origin, c.id));
  auto parent = judge_one(test, c, *outputs.parent, outputs.parent_perturbed, nullptr);
  if (!parent) return parent.status();
  if (parent->passed)
    return Verdict{Outcome::kFail, "regression (the parent passes): " + child->reason};
  return Verdict{Outcome::kInherited, "the parent fails too: " + child->reason};
}

TestResult summarize(const BehaviouralTest& test, const std::string& model, const CaseSet& cases,
                     const std::vector<Verdict>& verdicts, std::size_t max_examples) {
  assert(verdicts.size() == cases.cases.size());
  TestResult r;
  r.test = test.name;
  r.model = model;
  r.type = std::string(test_type_name(test.type));
  r.capability = test.capability;
  r.cases = verdicts.size();
  r.not_applicable = cases.not_applicable;
  r.max_failure_rate = test.max_failure_rate;
  for (std::size_t i = 0; i < verdicts.size(); ++i) {
    if (verdicts[i].outcome == Outcome::kInherited) ++r.inherited;
    if (verdicts[i].outcome != Outcome::kFail) continue;
    ++r.failures;
    if (r.examples.size() < max_examples) {
      const TestCase& c = cases.cases[i];
      r.examples.push_back({c.id, c.input, c.perturbed.value_or(""), verdicts[i].reason});
    }
  }
  r.failure_rate =
      r.cases == 0 ? 0.0 : static_cast<double>(r.failures) / static_cast<double>(r.cases);
  // A test that judged nothing has not shown anything, so it does not pass.
  r.passed = r.cases > 0 && r.failure_rate <= r.max_failure_rate;
  return r;
}

}  // namespace scion::assertions
