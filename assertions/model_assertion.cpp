#include "assertions/model_assertion.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>

#include "assertions/body_fields.h"

namespace scion::assertions {

std::string_view assertion_kind_name(AssertionKind kind) {
  switch (kind) {
    case AssertionKind::kLowConfidence:
      return "low_confidence";
    case AssertionKind::kParentDisagreement:
      return "parent_disagreement";
    case AssertionKind::kPerturbationFlip:
      return "perturbation_flip";
    case AssertionKind::kAllowedOutputs:
      return "allowed_outputs";
    case AssertionKind::kExpression:
      return "expression";
  }
  return "?";
}

namespace {

Status read_allowed_outputs(const BodyFields& body, std::string* pattern,
                            std::optional<std::regex>* regex, std::vector<std::string>* labels) {
  SCION_RETURN_IF_ERROR(body.check_keys({"pattern", "labels", "ignore_case"}));
  auto p = body.string("pattern");
  if (!p) return p.status();
  auto l = body.strings("labels");
  if (!l) return l.status();
  if (l->empty())
    return body.error("labels", "is required: the labels allowed for matching inputs");
  auto ignore_case = body.boolean("ignore_case", false);
  if (!ignore_case) return ignore_case.status();
  try {
    auto flags = std::regex::ECMAScript;
    if (*ignore_case) flags |= std::regex::icase;
    *regex = std::regex(*p, flags);
  } catch (const std::regex_error& e) {
    return body.error(
        "pattern",
        fmt::format("\"{}\" is not a valid regular expression (ECMAScript): {}", *p, e.what()));
  }
  *pattern = *p;
  *labels = std::move(l.value());
  return Status::ok();
}

bool is_name(std::string_view text) {
  return !text.empty() && std::all_of(text.begin(), text.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
  });
}

// `continuations: {name: "text"}`, and the expression's variables checked against them:
// with continuations it may use lm.<name>, parent.lm.<name> and length only; without,
// no lm.* at all.
Status read_continuations(const BodyFields& body, const Expression& expression,
                          std::vector<std::pair<std::string, std::string>>* out) {
  if (const nlohmann::json* value = body.find("continuations")) {
    if (!value->is_object() || value->empty())
      return body.error("continuations",
                        "expected a mapping {name: \" text\"}: lm.<name> becomes the "
                        "log-likelihood of the text after each input");
    for (const auto& [name, text] : value->items()) {
      if (!is_name(name))
        return body.error("continuations." + name,
                          "is not a name: use letters, digits and _ (it becomes lm." + name + ")");
      if (!text.is_string() || text.get<std::string>().empty())
        return body.error("continuations." + name,
                          "expected the non-empty text to score after each input, got " +
                              (text.is_string() ? std::string("an empty string") : json_type_name(text)));
      out->emplace_back(name, text.get<std::string>());
    }
  }
  std::vector<std::string> names;
  for (const auto& [name, text] : *out) names.push_back(name);
  for (const std::string& variable : expression.variables()) {
    const std::string_view own = std::string_view(variable).starts_with("parent.")
                                     ? std::string_view(variable).substr(7)
                                     : std::string_view(variable);
    if (own.starts_with("lm.")) {
      const std::string name(own.substr(3));
      if (out->empty())
        return body.error("expression",
                          fmt::format("uses {}, but the assertion names no continuations; add "
                                      "continuations: {{{}: \" text\"}} with the text to score "
                                      "after each input",
                                      variable, name));
      if (std::find(names.begin(), names.end(), name) == names.end())
        return body.error("expression", fmt::format("uses {}, but continuations: names no '{}' "
                                                    "(it names {})",
                                                    variable, name, fmt::join(names, ", ")));
    } else if (!out->empty() && variable != "length") {
      return body.error("expression",
                        fmt::format("uses '{}', which a language model does not have: with "
                                    "continuations: the expression sees lm.<name>, "
                                    "parent.lm.<name> and length",
                                    variable));
    }
  }
  return Status::ok();
}

// lm.<name> (under `prefix`) for each continuation, from scores keyed by text.
Status bind_scores(const ModelOutput& output, const std::string& prefix, const std::string& origin,
                   const std::vector<std::pair<std::string, std::string>>& continuations,
                   VariableMap* values) {
  for (const auto& [name, text] : continuations) {
    auto it = output.continuation_logprobs.find(text);
    if (it == output.continuation_logprobs.end())
      return invalid_argument(fmt::format(
          "{}: the {} output has no score for continuation '{}' (\"{}\"); the evaluator "
          "must score every continuation the assertion names",
          origin, prefix.empty() ? "model's" : "parent's", name, text));
    (*values)[prefix + "lm." + name] = it->second;
  }
  return Status::ok();
}

}  // namespace

Result<ModelAssertion> ModelAssertion::compile(const spec::AssertionSpec& spec,
                                               const LexiconSet& lexicons) {
  ModelAssertion a;
  a.name_ = spec.name;
  a.models_ = spec.models;
  a.origin_ = fmt::format("{}:{}:{}: assertion '{}'", spec.location.file, spec.location.line,
                          spec.location.column, spec.name);
  // Body keys sit beside kind and models in the spec, so errors use the spec's key path.
  const BodyFields body(
      spec.body,
      fmt::format("{}:{}:{}", spec.location.file, spec.location.line, spec.location.column),
      fmt::format("assertions.{}", spec.name), &spec.body_locations);
  if (spec.kind == "low_confidence") {
    a.kind_ = AssertionKind::kLowConfidence;
    SCION_RETURN_IF_ERROR(body.check_keys({"threshold"}));
    auto t = body.number("threshold", 0.6);
    if (!t) return t.status();
    if (*t <= 0.0 || *t > 1.0) return body.error("threshold", "must be in (0, 1]");
    a.threshold_ = *t;
  } else if (spec.kind == "parent_disagreement") {
    a.kind_ = AssertionKind::kParentDisagreement;
    SCION_RETURN_IF_ERROR(body.check_keys({"severity"}));
    auto s = body.choice("severity", {"parent_confidence", "probability_gap"}, "parent_confidence");
    if (!s) return s.status();
    a.gap_severity_ = *s == "probability_gap";
  } else if (spec.kind == "perturbation_flip") {
    a.kind_ = AssertionKind::kPerturbationFlip;
    SCION_RETURN_IF_ERROR(body.check_keys({"perturb"}));
    if (!body.has("perturb")) return body.error("perturb", "is required, e.g. {kind: typos}");
    auto p = Perturbation::compile(*body.find("perturb"), lexicons, body.origin(),
                                   body.path() + ".perturb", body.locations());
    if (!p) return p.status();
    a.perturbation_ = std::move(p.value());
  } else if (spec.kind == "allowed_outputs") {
    a.kind_ = AssertionKind::kAllowedOutputs;
    SCION_RETURN_IF_ERROR(read_allowed_outputs(body, &a.pattern_, &a.regex_, &a.allowed_labels_));
  } else if (spec.kind == "expression") {
    a.kind_ = AssertionKind::kExpression;
    SCION_RETURN_IF_ERROR(body.check_keys({"expression", "continuations"}));
    auto text = body.string("expression");
    if (!text) return text.status();
    auto e = Expression::compile(*text, body.where("expression"));
    if (!e) return e.status();
    SCION_RETURN_IF_ERROR(read_continuations(body, *e, &a.continuations_));
    a.expression_ = std::move(e.value());
  } else {
    return body.error("kind", fmt::format("unknown assertion kind '{}'; use low_confidence, "
                                          "parent_disagreement, perturbation_flip, "
                                          "allowed_outputs or expression",
                                          spec.kind));
  }
  return a;
}

bool ModelAssertion::needs_parent() const {
  if (kind_ == AssertionKind::kParentDisagreement) return true;
  return expression_ && expression_->uses_prefix("parent.");
}

std::optional<std::string> ModelAssertion::unsupported_for(spec::HeadTask task) const {
  if (task != spec::HeadTask::kRegression || kind_ == AssertionKind::kExpression)
    return std::nullopt;
  return "a regression head predicts values: only expression assertions (on `value`) check it";
}

Result<double> ModelAssertion::severity(const AssertionInput& in) const {
  auto missing = [&](std::string_view what) {
    return invalid_argument(fmt::format("{}: needs the {} output", origin_, what));
  };
  if (in.output == nullptr) return missing("model's");
  const ModelOutput& out = *in.output;
  // NaN compares false and std::max(0, NaN) is 0, so a diverged model's output would
  // violate nothing: it violates every assertion, at the top of the probability scale.
  for (const ModelOutput* checked : {in.output, in.perturbed})
    if (checked && non_finite_value(*checked)) return 1.0;
  switch (kind_) {
    case AssertionKind::kLowConfidence:
      return std::max(0.0, threshold_ - confidence(out));
    case AssertionKind::kParentDisagreement: {
      if (in.parent == nullptr) return missing("parent's");
      if (out.task != spec::HeadTask::kClassification)  // a label set or a tag sequence
        return prediction(out) == prediction(*in.parent) ? 0.0 : confidence(*in.parent);
      const std::string parent_label = predicted_label(*in.parent);
      const std::string label = predicted_label(out);
      if (label == parent_label) return 0.0;
      if (!gap_severity_) return confidence(*in.parent);
      // How much more the model believes its own label than its parent's (0 if it lacks it).
      return std::max(0.0, confidence(out) - probability_of(out, parent_label).value_or(0.0));
    }
    case AssertionKind::kPerturbationFlip: {
      if (in.perturbed == nullptr) return missing("perturbed input's");
      if (out.task != spec::HeadTask::kClassification)
        return prediction(out) == prediction(*in.perturbed) ? 0.0 : confidence(*in.perturbed);
      const std::string before = predicted_label(out);
      if (predicted_label(*in.perturbed) == before) return 0.0;
      return std::max(
          0.0, confidence(*in.perturbed) - probability_of(*in.perturbed, before).value_or(0.0));
    }
    case AssertionKind::kAllowedOutputs: {
      if (!std::regex_search(in.text.begin(), in.text.end(), *regex_)) return 0.0;
      std::vector<std::string> answered = {predicted_label(out)};
      if (out.task == spec::HeadTask::kMultiLabel) answered = predicted_labels(out);
      if (out.task == spec::HeadTask::kTokenClassification) answered = predicted_tags(out);
      for (const std::string& label : answered)
        if (!label.empty() && std::find(allowed_labels_.begin(), allowed_labels_.end(), label) ==
                                  allowed_labels_.end())
          return confidence(out);
      return 0.0;
    }
    case AssertionKind::kExpression: {
      VariableMap values;
      if (continuations_.empty()) {
        add_output_variables(out, "", &values);
        if (in.parent) add_output_variables(*in.parent, "parent.", &values);
      } else {
        SCION_RETURN_IF_ERROR(bind_scores(out, "", origin_, continuations_, &values));
        if (in.parent)
          SCION_RETURN_IF_ERROR(bind_scores(*in.parent, "parent.", origin_, continuations_, &values));
      }
      values["length"] = static_cast<double>(in.text.size());
      auto v = expression_->evaluate(values);
      if (!v) return v.status();
      return std::isnan(*v) ? 0.0 : std::max(0.0, *v);
    }
  }
  return 0.0;
}

}  // namespace scion::assertions
