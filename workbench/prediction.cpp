#include "workbench/prediction.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "runtime/evaluation/family_evaluator.h"
#include "workbench/stored_family.h"
#include "workbench/version_rounds.h"

namespace scion::workbench {
namespace {

// What to do instead with a language model: continue text with a causal one, ask a
// descendant with a head of a masked one.
std::string language_model_remedy(const spec::Workspace& ws, const std::string& name) {
  const spec::Model* model = ws.find_model(name);
  if (model && ws.objective_of(*model) == spec::Objective::kCausalLm)
    return fmt::format(
        " (it is a causal language model): continue text with it through `scion predict {} "
        "--generate --text \"...\"`",
        name);
  return " (it is a language model); predict one of its descendants with a head";
}

// The dataset `model` last trained on (its own, else its nearest ancestor's); null for
// an imported model never trained since.
const spec::Dataset* trained_on(const spec::Workspace& ws, const spec::Model& model) {
  for (const spec::Model* m : ws.ancestry(model))
    if (m->training) return ws.find_dataset(m->training->dataset);
  return nullptr;
}

// invalid_argument when the inputs' shape does not fit the model's: a model trained on
// sentence pairs reads a pair per input, one trained on single texts reads no pair.
Status check_input_shape(const spec::Workspace& ws, const spec::Model& model,
                         const std::vector<PredictText>& texts) {
  const spec::Dataset* data = trained_on(ws, model);
  const bool reads_pairs = data && !data->text_pair_field.empty();
  for (const PredictText& t : texts) {
    if (reads_pairs && !t.pair)
      return invalid_argument(fmt::format(
          "{}: model '{}' reads sentence pairs (datasets.{}.text_pair_field: {}) and the input "
          "has no second text; give --pair with each --text, or --pair-field with --file",
          t.origin, model.name, data->name, data->text_pair_field));
    if (!reads_pairs && t.pair)
      return invalid_argument(fmt::format(
          "{}: model '{}' reads single texts{}, and the input is a sentence pair; leave out "
          "--pair and --pair-field for it, or predict with a model trained on pairs",
          t.origin, model.name,
          data ? " (datasets." + data->name + " has no text_pair_field)" : ""));
  }
  return Status::ok();
}

Result<Predictor> predictor_for(const spec::Workspace& ws, const std::string& name,
                                const BehaviourSuite& suite, bool check_assertions,
                                std::vector<std::string>& notes) {
  auto found = find_classifier_model(ws, name, language_model_remedy(ws, name));
  if (!found) return found.status();
  Predictor p{.model = *found};
  // A parent that answers the same task (a head of another task cannot be compared with).
  if (!p.model->is_base() && classifier_labels(ws, *ws.find_model(p.model->from)) &&
      ws.head_task_of(*ws.find_model(p.model->from)) == ws.head_task_of(*p.model))
    p.parent = ws.find_model(p.model->from);
  if (!check_assertions) return p;
  for (const assertions::ModelAssertion& a : suite.assertions) {
    if (!applies(ws, a, p.model->name)) continue;
    if (a.needs_parent() && !p.parent) {
      notes.push_back("assertion '" + a.name() + "' skipped for '" + p.model->name +
                      "': it compares with the parent, which has no head of the same task");
      continue;
    }
    p.checks.push_back(&a);
  }
  return p;
}

// Each text longer than a model reads, with the models that read only its first tokens.
std::vector<Truncation> truncations(const StoredFamily& family,
                                    const std::vector<Predictor>& predictors,
                                    const std::vector<PredictText>& texts) {
  std::vector<Truncation> truncated;
  for (const PredictText& t : texts) {
    Truncation truncation{.origin = t.origin};
    for (const Predictor& p : predictors) {
      const runtime::EvaluatedModel& model = *family.classifier(p.model->name);
      truncation.tokens = runtime::input_tokens(model, {t.text, t.pair});
      const std::size_t kept = runtime::text_capacity(model);
      if (truncation.tokens > kept) truncation.readers.emplace_back(p.model->name, kept);
    }
    if (!truncation.readers.empty()) truncated.push_back(std::move(truncation));
  }
  return truncated;
}

}  // namespace

Result<PredictionSetup> prepare_predictions(const spec::Workspace& ws,
                                            const PredictRequest& request) {
  PredictionSetup setup;
  if (request.check_assertions) {
    auto compiled = compile_suite(ws);
    if (!compiled) return compiled.status();
    setup.suite = std::move(*compiled);
  }
  std::set<std::string> seen;
  for (const std::string& name : request.models) {
    if (!seen.insert(name).second) continue;  // a model named twice answers once
    auto p = predictor_for(ws, name, setup.suite, request.check_assertions, setup.notes);
    if (!p) return p.status();
    SCION_RETURN_IF_ERROR(check_input_shape(ws, *p->model, request.texts));
    setup.predictors.push_back(std::move(*p));
  }
  return setup;
}

Result<std::vector<PredictionViolation>> violations_of(const Predictor& p,
                                                       const runtime::ModelInput& in,
                                                       const FamilyOutputs& outputs) {
  std::vector<PredictionViolation> violations;
  const std::string key = input_key(in);
  for (const assertions::ModelAssertion* a : p.checks) {
    assertions::AssertionInput input{.text = in.text, .output = &outputs.at(p.model->name, key)};
    if (a->needs_parent()) input.parent = &outputs.at(p.parent->name, key);
    std::string perturbed;
    if (const assertions::Perturbation* perturbation = a->perturbation()) {
      auto changed = perturbation->apply(in.text, 0);
      if (!changed) continue;
      perturbed = *changed;
      input.perturbed = &outputs.at(p.model->name, input_key({perturbed, in.pair}));
    }
    auto severity = a->severity(input);
    if (!severity) return severity.status();
    if (*severity > 0) violations.push_back({a->name(), *severity, perturbed});
  }
  return violations;
}

Status check_finite(const std::vector<Predictor>& predictors,
                    const std::vector<runtime::ModelInput>& inputs, const FamilyOutputs& outputs) {
  for (const Predictor& p : predictors)
    for (const runtime::ModelInput& input : inputs)
      if (auto value = assertions::non_finite_value(outputs.at(p.model->name, input_key(input))))
        return Status(
            StatusCode::kDiverged,
            fmt::format("model '{}' gave {} for \"{}\": its stored parameters are not "
                        "finite (it diverged, or was imported with --allow-nonfinite); "
                        "retrain it with `scion run --force {}` and a lower learning rate",
                        p.model->name, *value, input.text, p.model->name));
  return Status::ok();
}

Result<Predictions> predict(const spec::Workspace& ws, lineage::LineageStore& store,
                            runtime::Backend& backend, const PredictionSetup& setup,
                            const PredictRequest& request) {
  std::vector<runtime::ModelInput> inputs;
  for (const PredictText& t : request.texts) inputs.push_back({t.text, t.pair});
  Predictions result;
  for (const Predictor& p : setup.predictors) result.models.push_back(p.model->name);
  // The parents that assertions compare with join the evaluation, and perturbed texts
  // join the inputs.
  std::vector<std::string> names = result.models;
  std::set<std::string> seen(names.begin(), names.end());
  EvaluationPlan plan;
  for (const runtime::ModelInput& input : inputs) plan.add_input(input);
  for (const Predictor& p : setup.predictors)
    for (const assertions::ModelAssertion* a : p.checks) {
      if (a->needs_parent() && seen.insert(p.parent->name).second) names.push_back(p.parent->name);
      if (const assertions::Perturbation* perturbation = a->perturbation())
        for (const runtime::ModelInput& input : inputs)
          if (auto perturbed = perturbation->apply(input.text, 0))
            plan.add_input({*perturbed, input.pair});
    }

  StoredFamily family(ws, store, backend);
  SCION_RETURN_IF_ERROR(family.load(names));
  result.truncated = truncations(family, setup.predictors, request.texts);
  auto outputs = evaluate_models(family, backend, names, plan, request.chunk_size);
  if (!outputs) return outputs.status();
  SCION_RETURN_IF_ERROR(check_finite(setup.predictors, inputs, *outputs));

  for (const Predictor& p : setup.predictors) result.checks += p.checks.size();
  for (const runtime::ModelInput& input : inputs)
    for (const Predictor& p : setup.predictors) {
      auto violations = violations_of(p, input, *outputs);
      if (!violations) return violations.status();
      result.violations += violations->size();
      result.predictions.push_back({.model = p.model->name,
                                    .text = input.text,
                                    .pair = input.pair,
                                    .output = outputs->at(p.model->name, input_key(input)),
                                    .violations = std::move(*violations)});
    }
  return result;
}

Result<Predictions> predict_versions(const spec::Workspace& ws, lineage::LineageStore& store,
                                     runtime::Backend& backend, const PredictRequest& request,
                                     std::vector<std::string>& notes) {
  auto rounds = version_rounds(ws, store, request.models);
  if (!rounds) return rounds.status();
  std::vector<Predictions> parts;
  for (const VersionRound& round : *rounds) {
    PredictRequest part = request;
    part.models = round.models;
    auto setup = prepare_predictions(round.workspace, part);
    if (!setup) return setup.status();
    notes.insert(notes.end(), setup->notes.begin(), setup->notes.end());
    auto result = predict(round.workspace, store, backend, *setup, part);
    if (!result) return result.status();
    for (std::string& m : result->models) m = round.labels.at(m);
    for (Prediction& p : result->predictions) p.model = round.labels.at(p.model);
    for (Truncation& t : result->truncated)
      for (auto& [model, kept] : t.readers) model = round.labels.at(model);
    parts.push_back(std::move(*result));
  }
  Predictions merged;
  for (Predictions& part : parts) {
    merged.models.insert(merged.models.end(), part.models.begin(), part.models.end());
    merged.truncated.insert(merged.truncated.end(), part.truncated.begin(), part.truncated.end());
    merged.checks += part.checks;
    merged.violations += part.violations;
  }
  // Models in the order named; text by text, then model by model, as one round gives them.
  const auto named_at = [&](const std::string& label) {
    return std::find(request.models.begin(), request.models.end(), label) - request.models.begin();
  };
  const auto in_named_order = [&](const auto& a, const auto& b) {
    return named_at(a) < named_at(b);
  };
  std::stable_sort(merged.models.begin(), merged.models.end(), in_named_order);
  for (std::size_t text = 0; text < request.texts.size(); ++text) {
    const std::size_t first = merged.predictions.size();
    for (Predictions& part : parts) {
      const std::size_t n = part.models.size();
      for (std::size_t i = text * n; i < (text + 1) * n; ++i)
        merged.predictions.push_back(std::move(part.predictions[i]));
    }
    std::stable_sort(merged.predictions.begin() + static_cast<std::ptrdiff_t>(first),
                     merged.predictions.end(), [&](const Prediction& a, const Prediction& b) {
                       return named_at(a.model) < named_at(b.model);
                     });
  }
  return merged;
}

}  // namespace scion::workbench
