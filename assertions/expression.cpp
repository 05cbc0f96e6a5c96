#include "assertions/expression.h"

#include <fmt/format.h>
#include <muParser.h>

#include <algorithm>

namespace scion::assertions {
namespace {

constexpr const char* kNameChars =
    "0123456789_abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.";

// muparser calls this for every name it has not seen; each becomes a slot in storage.
double* create_variable(const char* name, void* storage) {
  return &(*static_cast<VariableMap*>(storage))[name];
}

// muparser's messages end in "at position N" (0-based); we give the column instead.
std::string without_position(std::string message) {
  const auto at = message.find(" at position ");
  if (at != std::string::npos) message.erase(at);
  return message;
}

std::string parse_error(std::string_view where, std::string_view text, int position,
                        const std::string& message) {
  // muparser may place "unexpected end" past the last character; point just after it.
  const int column = std::clamp(position + 1, 1, static_cast<int>(text.size()) + 1);
  return fmt::format("{}: the expression does not parse at column {}: {}\n    {}\n    {}^", where,
                     column, without_position(message), text,
                     std::string(static_cast<std::size_t>(column - 1), ' '));
}

}  // namespace

Result<Expression> Expression::compile(std::string_view text, std::string_view where) {
  Expression e;
  e.text_ = std::string(text);
  e.where_ = std::string(where);
  e.parser_ = std::make_unique<mu::Parser>();
  e.storage_ = std::make_unique<VariableMap>();
  e.mutex_ = std::make_unique<std::mutex>();
  if (e.text_.find_first_not_of(" \t") == std::string::npos)
    return spec_error(fmt::format(
        "{}: the expression is empty; write a formula such as \"confidence < 0.5\"", where));
  try {
    e.parser_->DefineNameChars(kNameChars);
    e.parser_->SetVarFactory(create_variable, e.storage_.get());
    e.parser_->SetExpr(e.text_);
    e.parser_->Eval();  // muparser parses lazily; this parses (variables are all 0 here)
    for (const auto& [name, pointer] : e.parser_->GetUsedVar()) e.variables_.push_back(name);
  } catch (const mu::Parser::exception_type& error) {
    return spec_error(parse_error(where, text, error.GetPos(), error.GetMsg()));
  }
  return e;
}

Expression::Expression(const Expression& other) { *this = other; }

Expression& Expression::operator=(const Expression& other) {
  if (this == &other) return *this;
  // The text already parsed once, so re-compiling cannot fail.
  Expression copy = std::move(compile(other.text_, other.where_).value());
  *this = std::move(copy);
  return *this;
}

Expression::Expression(Expression&&) noexcept = default;
Expression& Expression::operator=(Expression&&) noexcept = default;
Expression::~Expression() = default;

bool Expression::uses_prefix(std::string_view prefix) const {
  for (const std::string& v : variables_)
    if (v.starts_with(prefix)) return true;
  return false;
}

Result<double> Expression::evaluate(const VariableMap& values) const {
  std::lock_guard<std::mutex> lock(*mutex_);
  for (auto& [name, slot] : *storage_) {
    auto it = values.find(name);
    if (it == values.end()) {
      std::vector<std::string_view> known;
      for (const auto& [k, v] : values) known.push_back(k);
      return invalid_argument(
          fmt::format("{}: the expression \"{}\" uses '{}', which this output does not have; "
                      "available: {}",
                      where_, text_, name, fmt::join(known, ", ")));
    }
    slot = it->second;
  }
  try {
    return parser_->Eval();
  } catch (const mu::Parser::exception_type& error) {
    return invalid_argument(parse_error(where_, text_, error.GetPos(), error.GetMsg()));
  }
}

void add_output_variables(const ModelOutput& output, std::string_view prefix, VariableMap* values) {
  const std::string p(prefix);
  for (std::size_t i = 0; i < output.labels.size() && i < output.probabilities.size(); ++i)
    (*values)[p + "p." + output.labels[i]] = output.probabilities[i];
  // A regression head's outputs: `value` (the first) and value.<name> for each.
  for (std::size_t i = 0; i < output.labels.size() && i < output.values.size(); ++i)
    (*values)[p + "value." + output.labels[i]] = output.values[i];
  if (!output.values.empty()) (*values)[p + "value"] = output.values.front();
  if (output.task == spec::HeadTask::kMultiLabel)
    (*values)[p + "labels_predicted"] = static_cast<double>(predicted_labels(output).size());
  if (!output.is_classifier()) return;
  (*values)[p + "confidence"] = confidence(output);
  (*values)[p + "margin"] = margin(output);
  (*values)[p + "entropy"] = entropy(output);
  (*values)[p + "label_index"] = predicted_index(output);
  (*values)[p + "num_labels"] = static_cast<double>(output.probabilities.size());
}

}  // namespace scion::assertions
