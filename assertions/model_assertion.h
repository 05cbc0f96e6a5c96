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
//   expression           {expression: "..."}: the formula's value is the severity
//                        (values <= 0 and NaN mean no violation); variables as in
//                        expression.h for the output and (parent.) its parent's,
//                        plus `length` (input characters)
// The evaluator asks needs_parent() / perturbation() to know which extra outputs to
// compute. Immutable once compiled; severity() is thread-safe.
#pragma once

#include <optional>
#include <regex>
#include <string>
#include <string_view>
#include <vector>

#include "assertions/expression.h"
#include "assertions/lexicon.h"
#include "assertions/model_output.h"
#include "assertions/perturbation.h"
#include "spec/status.h"
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
  AssertionKind kind() const { return kind_; }
  const std::vector<std::string>& models() const { return models_; }
  bool needs_parent() const;
  // The perturbation whose output the assertion compares with, if any.
  const Perturbation* perturbation() const { return perturbation_ ? &*perturbation_ : nullptr; }

  // Severity >= 0. Fails (invalid argument) when an output it needs is missing or an
  // expression names a variable the output lacks.
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
};

std::string_view assertion_kind_name(AssertionKind kind);

}  // namespace scion::assertions
