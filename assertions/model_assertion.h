// ModelAssertion: a runtime predicate over one model output that returns a severity,
// in the style of model assertions (Kang et al., MLSys 2020). Severity 0 means no
// violation; larger means worse. Kinds and body keys (docs/testing.md, "Model assertions"):
//   low_confidence       {threshold: 0.6}: max probability below threshold;
//                        severity = threshold - confidence
//   parent_disagreement  {severity: parent_confidence | probability_gap}: the model's
//                        label differs (by name) from its parent's
//   perturbation_flip    {perturb: {...}}: the label changes under a perturbation;
//                        severity = p'(new label) - p'(old label) on the perturbed output
//   allowed_outputs      {pattern: "regex", labels: [..], ignore_case: false}: inputs
//                        matching pattern must get one of labels; severity = confidence
//   expression           {expression: "...", continuations: {name: "text"}}: the
//                        formula's value is the severity (values <= 0 and NaN mean no
//                        violation). Without continuations it watches classifiers:
//                        variables as in expression.h for the output and (parent.) its
//                        parent's, plus `length` (input characters). With continuations
//                        it watches language models: lm.<name> is log p(text | input)
//                        for each named continuation (parent.lm.<name> the parent's),
//                        plus `length`; nothing else.
// An output (or perturbed output) that is not finite (model_output.h, non_finite_value)
// has severity 1 under every kind. Every other kind watches classifiers. The evaluator asks needs_parent(),
// perturbation() and continuations() to know which extra outputs to compute. Immutable
// once compiled; severity() is thread-safe.
#pragma once

#include <optional>
#include <regex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "assertions/expression.h"
#include "assertions/lexicon.h"
#include "assertions/model_output.h"
#include "assertions/perturbation.h"
#include "base/status.h"
#include "spec/workspace.h"

namespace scion::assertions {

enum class AssertionKind {
  kLowConfidence,
  kParentDisagreement,
  kPerturbationFlip,
  kAllowedOutputs,
  kExpression
};

// What one assertion sees for one input. Pointers are borrowed.
struct AssertionInput {
  std::string_view text;
  const ModelOutput* output = nullptr;     // REQUIRED
  const ModelOutput* parent = nullptr;     // REQUIRED when needs_parent()
  const ModelOutput* perturbed = nullptr;  // REQUIRED when perturbation() is set
};

class ModelAssertion {
 public:
  // Errors name the assertion's file:line:col and key path; an expression that does not
  // parse gives its column.
  static Result<ModelAssertion> compile(const spec::AssertionSpec& spec,
                                        const LexiconSet& lexicons);

  const std::string& name() const { return name_; }
  const std::string& origin() const { return origin_; }  // "file:line:col: assertion 'x'"
  AssertionKind kind() const { return kind_; }
  const std::vector<std::string>& models() const { return models_; }
  bool needs_parent() const;
  // The perturbation whose output the assertion compares with, if any.
  const Perturbation* perturbation() const { return perturbation_ ? &*perturbation_ : nullptr; }
  // The continuations a language-model assertion scores after each input: (name, text),
  // by name. Empty for an assertion on classifiers.
  const std::vector<std::pair<std::string, std::string>>& continuations() const {
    return continuations_;
  }
  bool scores_continuations() const { return !continuations_.empty(); }
  // The labels an allowed_outputs assertion allows; empty for the other kinds.
  const std::vector<std::string>& allowed_labels() const { return allowed_labels_; }

  // Why the assertion cannot check a model whose head has `task`, or nullopt when it can:
  // only expressions check regression heads (they have no label or probability to be
  // unsure of, disagree on or flip). Assertions without `models:` skip such models.
  std::optional<std::string> unsupported_for(spec::HeadTask task) const;

  // Severity >= 0. Fails (invalid argument) when an output it needs is missing, an
  // expression names a variable the output lacks, or a language model's output lacks the
  // score of a named continuation (output->continuation_logprobs is keyed by text).
  Result<double> severity(const AssertionInput& input) const;

 private:
  std::string name_;
  std::string origin_;
  AssertionKind kind_ = AssertionKind::kLowConfidence;
  std::vector<std::string> models_;
  double threshold_ = 0.6;
  bool gap_severity_ = false;  // parent_disagreement: probability gap instead of parent confidence
  std::optional<Perturbation> perturbation_;
  std::string pattern_;
  std::optional<std::regex> regex_;
  std::vector<std::string> allowed_labels_;
  std::optional<Expression> expression_;
  std::vector<std::pair<std::string, std::string>> continuations_;  // (name, text)
};

std::string_view assertion_kind_name(AssertionKind kind);

}  // namespace scion::assertions
