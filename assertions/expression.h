// Expression: a user formula over named quantities of model outputs, such as
// "p.positive > 0.5" or "(confidence < 0.6) * (1 - margin)", evaluated with muparser.
//
// Names may contain '.', so `p.positive` and `parent.p.positive` are single variables.
// compile() checks the syntax without knowing any model and records the variables the
// formula uses; evaluate() binds them from a VariableMap and fails, naming the variable
// and what is available, if one is missing (a label the model does not have).
// Comparisons yield 1 or 0; && || ?: and the usual functions (abs, min, max, ln, ...)
// are available. An Expression may be copied (the copy re-parses its text); evaluate()
// is thread-safe (calls on one object are serialised).
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "assertions/model_output.h"
#include "base/status.h"

namespace mu {
class Parser;
}

namespace scion::assertions {

using VariableMap = std::map<std::string, double, std::less<>>;

class Expression {
 public:
  // Parses `text`; `where` names the owner for errors ("scion.yaml:9:3: assertion
  // 'sure'"), and an error gives the 1-based column in the expression with a caret line.
  static Result<Expression> compile(std::string_view text, std::string_view where);

  Expression(const Expression& other);
  Expression& operator=(const Expression& other);
  Expression(Expression&&) noexcept;
  Expression& operator=(Expression&&) noexcept;
  ~Expression();

  const std::string& text() const { return text_; }
  // Variable names the formula refers to, sorted.
  const std::vector<std::string>& variables() const { return variables_; }
  // True if any variable starts with `prefix` (e.g. "parent.").
  bool uses_prefix(std::string_view prefix) const;

  Result<double> evaluate(const VariableMap& values) const;

 private:
  Expression() = default;
  std::string text_;
  std::string where_;
  std::vector<std::string> variables_;
  std::unique_ptr<mu::Parser> parser_;
  std::unique_ptr<VariableMap> storage_;  // muparser holds pointers into these nodes
  std::unique_ptr<std::mutex> mutex_;
};

// Adds the variables of one head model's output under `prefix` ("" for the model under
// test, "parent." or "perturbed."): <prefix>p.<label> for each label (class or multi-label
// probabilities), a regression head's <prefix>value (its first output) and
// <prefix>value.<name> for each, a multi-label head's <prefix>labels_predicted, and
// <prefix>confidence, <prefix>margin, <prefix>entropy, <prefix>label_index,
// <prefix>num_labels. A language
// model's lm.<name> variables are bound by the assertion that names its continuations
// (model_assertion.h).
void add_output_variables(const ModelOutput& output, std::string_view prefix, VariableMap* values);

}  // namespace scion::assertions
