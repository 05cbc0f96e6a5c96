#include "workbench/behaviour_suite.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <set>

#include "assertions/body_fields.h"
#include "runtime/data/dataset_reader.h"
#include "runtime/evaluation/continuation_scorer.h"
#include "runtime/evaluation/family_evaluator.h"
#include "runtime/model/text_positions.h"
#include "spec/spelling.h"

namespace scion::workbench {

namespace {

// A `models:` entry of the other kind, as a spec error at the test or assertion.
Status check_kinds(const spec::Workspace& ws, const std::string& origin, const char* what,
                   const std::vector<std::string>& models, ModelKind asked) {
  for (const std::string& name : models) {
    const spec::Model* model = ws.find_model(name);
    if (!model || model_kind(ws, *model) == asked) continue;
    const std::string reads = asked == ModelKind::kLanguageModel
                                  ? "scores continuations, which only language models do"
                                  : "reads class labels, which only classifiers give";
    const std::string remedy =
        asked == ModelKind::kLanguageModel
            ? "remove it from models:"
            : std::string("remove it from models:; a language model is tested with ") +
                  (std::string_view(what) == "test"
                       ? "expect: {prefer: ..., over: ...}"
                       : "an expression assertion with continuations:");
    return spec_error(fmt::format("{}: models: '{}' is a {}, but this {} {}; {}", origin, name,
                                  kind_name(model_kind(ws, *model)), what, reads, remedy));
  }
  return Status::ok();
}

std::optional<std::string> unsupported(const assertions::BehaviouralTest& test,
                                       spec::HeadTask task) {
  return assertions::unsupported_for(test, task);
}
std::optional<std::string> unsupported(const assertions::ModelAssertion& assertion,
                                       spec::HeadTask task) {
  return assertion.unsupported_for(task);
}

// Why a test or assertion cannot judge `model`'s head task, or nullopt (also for models
// that are not head models: check_kinds says what is wrong with those).
template <class Checked>
std::optional<std::string> task_problem(const spec::Workspace& ws, const Checked& checked,
                                        const spec::Model& model) {
  if (model_kind(ws, model) != ModelKind::kClassifier) return std::nullopt;
  return unsupported(checked, ws.head_task_of(model));
}

// The head labels a test or assertion names: a test's expected labels and direction
// label, an allowed_outputs assertion's labels.
std::vector<std::string> named_labels(const assertions::BehaviouralTest& test) {
  std::vector<std::string> labels;
  using Kind = assertions::Expectation::Kind;
  if (test.expect.kind == Kind::kLabel || test.expect.kind == Kind::kNotLabel)
    labels = test.expect.labels;
  if (test.direction && test.direction->quantity == assertions::Direction::Quantity::kLabel)
    labels.push_back(test.direction->label);
  return labels;
}
std::vector<std::string> named_labels(const assertions::ModelAssertion& assertion) {
  return assertion.allowed_labels();
}

// Whether `model`'s head has every label the test or assertion names: one without
// `models:` runs on the models whose heads it can read (a sentiment test skips a
// multi-label model of topics beside the classifiers); one that names a model is judged
// on it, and a label it lacks is an error there.
template <class Checked>
bool has_named_labels(const spec::Workspace& ws, const Checked& checked, const spec::Model& model) {
  const auto labels = classifier_labels(ws, model);
  if (!labels) return true;
  for (const std::string& label : named_labels(checked))
    if (std::find(labels->begin(), labels->end(), label) == labels->end()) return false;
  return true;
}

// A `models:` entry whose head the test or assertion cannot judge, as a spec error.
template <class Checked>
Status check_tasks(const spec::Workspace& ws, const std::string& origin, const char* what,
                   const std::vector<std::string>& models, const Checked& checked) {
  for (const std::string& name : models) {
    const spec::Model* model = ws.find_model(name);
    if (!model) continue;
    if (auto why = task_problem(ws, checked, *model))
      return spec_error(
          fmt::format("{}: models: '{}' has a {} head, which this {} cannot judge: {}", origin,
                      name, spec::head_task_name(ws.head_task_of(*model)), what, *why));
  }
  return Status::ok();
}

// A continuation longer than a language model's rows hold, as a spec error at its origin.
Status check_continuations_fit(const runtime::ScoredModel& lm, const EvaluationPlan& plan) {
  const std::size_t room = runtime::max_continuation_tokens(*lm.weights);
  for (const auto& [continuation, origin] : plan.continuation_origins()) {
    const std::size_t tokens = lm.tokenizer->encode(continuation).size();
    if (tokens > room)
      return spec_error(fmt::format(
          "{}: the continuation \"{}\" is {} tokens, but language model '{}' scores at most {} "
          "(its max_length {} less {} prompt tokens and prefix positions{}); shorten the "
          "continuation",
          origin, continuation, tokens, lm.weights->name, room, lm.weights->arch.max_length,
          runtime::positions_before_text(*lm.weights),
          lm.weights->objective == spec::Objective::kMaskedLm ? ", [CLS] and [SEP]" : ""));
  }
  return Status::ok();
}

// The body of a test or assertion, for errors at its keys.
template <class Spec>
assertions::BodyFields body_fields(const Spec& spec, std::string_view section) {
  return assertions::BodyFields(
      spec.body,
      fmt::format("{}:{}:{}", spec.location.file, spec.location.line, spec.location.column),
      fmt::format("{}.{}", section, spec.name), &spec.body_locations);
}

// The labels the spec declares: every dataset's and every head's.
std::vector<std::string> declared_labels(const spec::Workspace& ws) {
  std::set<std::string> labels;
  for (const spec::Dataset& d : ws.datasets) labels.insert(d.labels.begin(), d.labels.end());
  for (const spec::Model& m : ws.models)
    if (m.adaptation.head)
      labels.insert(m.adaptation.head->labels.begin(), m.adaptation.head->labels.end());
  return {labels.begin(), labels.end()};
}

// An error for each of `labels` (read from `key` of `fields`) that is not declared.
void check_labels_declared(const assertions::BodyFields& fields, std::string_view key,
                           const std::vector<std::string>& labels,
                           const std::vector<std::string>& declared, std::vector<Status>& out) {
  const std::vector<std::string_view> words(declared.begin(), declared.end());
  const nlohmann::json* value = fields.find(key);
  const bool listed = value != nullptr && value->is_array();
  for (std::size_t i = 0; i < labels.size(); ++i) {
    if (std::find(declared.begin(), declared.end(), labels[i]) != declared.end()) continue;
    std::string hint = spec::did_you_mean(labels[i], words);
    if (hint.empty())
      hint = declared.empty() ? "; the spec declares no labels"
                              : fmt::format(" (declared labels: {})", fmt::join(declared, ", "));
    out.push_back(fields.error(listed ? fmt::format("{}[{}]", key, i) : std::string(key),
                               fmt::format("unknown label '{}'{}", labels[i], hint)));
  }
}

// Expected labels of a compiled test that the spec does not declare.
void check_test_labels(const spec::TestSpec& spec, const assertions::BehaviouralTest& test,
                       const std::vector<std::string>& declared, std::vector<Status>& out) {
  using Kind = assertions::Expectation::Kind;
  const assertions::BodyFields body = body_fields(spec, "tests");
  if (test.expect.kind == Kind::kLabel || test.expect.kind == Kind::kNotLabel)
    check_labels_declared(body.nested("expect"),
                          test.expect.kind == Kind::kLabel ? "label" : "not_label",
                          test.expect.labels, declared, out);
  if (test.direction && test.direction->quantity == assertions::Direction::Quantity::kLabel)
    check_labels_declared(body.nested("direction"), "label", {test.direction->label}, declared,
                          out);
}

}  // namespace

std::vector<Status> suite_problems(const spec::Workspace& ws) {
  std::vector<Status> problems;
  auto lexicons = assertions::LexiconSet::for_workspace(ws);
  if (!lexicons) return {lexicons.status()};
  const std::vector<std::string> declared = declared_labels(ws);
  for (const spec::TestSpec& spec : ws.tests) {
    auto test = assertions::compile_test(spec, *lexicons, ws.root_dir);
    if (!test) {
      problems.push_back(test.status());
      continue;
    }
    check_test_labels(spec, *test, declared, problems);
    if (test->data && !ws.find_dataset(test->data->dataset))
      problems.push_back(body_fields(spec, "tests")
                             .nested("data")
                             .error("dataset", fmt::format("no dataset '{}' under datasets:",
                                                           test->data->dataset)));
    if (Status s = check_kinds(ws, test->origin, "test", test->models, kind_of(*test)); !s.is_ok())
      problems.push_back(s);
    else if (Status t = check_tasks(ws, test->origin, "test", test->models, *test); !t.is_ok())
      problems.push_back(t);
  }
  for (const spec::AssertionSpec& spec : ws.assertions) {
    auto assertion = assertions::ModelAssertion::compile(spec, *lexicons);
    if (!assertion) {
      problems.push_back(assertion.status());
      continue;
    }
    check_labels_declared(body_fields(spec, "assertions"), "labels", assertion->allowed_labels(),
                          declared, problems);
    if (Status s = check_kinds(ws, assertion->origin(), "assertion", assertion->models(),
                               kind_of(*assertion));
        !s.is_ok())
      problems.push_back(s);
    else if (Status t =
                 check_tasks(ws, assertion->origin(), "assertion", assertion->models(), *assertion);
             !t.is_ok())
      problems.push_back(t);
  }
  return problems;
}

Result<BehaviourSuite> compile_suite(const spec::Workspace& ws) {
  BehaviourSuite suite;
  auto lexicons = assertions::LexiconSet::for_workspace(ws);
  if (!lexicons) return lexicons.status();
  for (const spec::TestSpec& spec : ws.tests) {
    auto test = assertions::compile_test(spec, *lexicons, ws.root_dir);
    if (!test) return test.status();
    std::vector<std::string> dataset_texts;
    if (test->data) {
      const spec::Dataset* dataset = ws.find_dataset(test->data->dataset);
      if (!dataset)
        return spec_error(test->origin + ": data.dataset: no dataset '" + test->data->dataset +
                          "' under datasets:");
      auto examples = data::read_dataset(*dataset);
      if (!examples) return examples.status();
      for (const data::Example& e : examples->examples) dataset_texts.push_back(e.text);
    }
    SCION_RETURN_IF_ERROR(check_kinds(ws, test->origin, "test", test->models, kind_of(*test)));
    SCION_RETURN_IF_ERROR(check_tasks(ws, test->origin, "test", test->models, *test));
    auto cases = assertions::generate_cases(*test, dataset_texts);
    if (!cases) return cases.status();
    suite.tests.push_back({std::move(*test), std::move(*cases)});
  }
  for (const spec::AssertionSpec& spec : ws.assertions) {
    auto assertion = assertions::ModelAssertion::compile(spec, *lexicons);
    if (!assertion) return assertion.status();
    SCION_RETURN_IF_ERROR(check_kinds(ws, assertion->origin(), "assertion", assertion->models(),
                                      kind_of(*assertion)));
    SCION_RETURN_IF_ERROR(
        check_tasks(ws, assertion->origin(), "assertion", assertion->models(), *assertion));
    suite.assertions.push_back(std::move(*assertion));
  }
  return suite;
}

bool covers(const std::vector<std::string>& models, const std::string& model) {
  return models.empty() || std::find(models.begin(), models.end(), model) != models.end();
}

ModelKind kind_of(const assertions::BehaviouralTest& test) {
  return test.scores_continuations() ? ModelKind::kLanguageModel : ModelKind::kClassifier;
}

ModelKind kind_of(const assertions::ModelAssertion& assertion) {
  return assertion.scores_continuations() ? ModelKind::kLanguageModel : ModelKind::kClassifier;
}

bool applies(const spec::Workspace& ws, const assertions::BehaviouralTest& test,
             const std::string& model) {
  const spec::Model& m = *ws.find_model(model);
  return covers(test.models, model) && model_kind(ws, m) == kind_of(test) &&
         !task_problem(ws, test, m) && (!test.models.empty() || has_named_labels(ws, test, m));
}

bool applies(const spec::Workspace& ws, const assertions::ModelAssertion& assertion,
             const std::string& model) {
  const spec::Model& m = *ws.find_model(model);
  return covers(assertion.models(), model) && model_kind(ws, m) == kind_of(assertion) &&
         !task_problem(ws, assertion, m) &&
         (!assertion.models().empty() || has_named_labels(ws, assertion, m));
}

std::size_t TextIndex::add(const std::string& text) {
  auto [it, inserted] = index_.emplace(text, texts_.size());
  if (inserted) texts_.push_back(text);
  return it->second;
}

std::string input_key(const runtime::ModelInput& input) {
  constexpr char kSeparator = '\x1d';
  if (!input.pair && (input.text.empty() || input.text.front() != kSeparator)) return input.text;
  nlohmann::json parts = nlohmann::json::array({input.text});
  if (input.pair) parts.push_back(*input.pair);
  return kSeparator + parts.dump();
}

void EvaluationPlan::add_input(const runtime::ModelInput& input) {
  const std::size_t before = texts_.texts().size();
  texts_.add(input_key(input));
  if (texts_.texts().size() > before) inputs_.push_back(input);
}

void EvaluationPlan::add_continuation(const std::string& input, const std::string& continuation,
                                      const std::string& origin) {
  if (seen_.emplace(input, continuation).second) queries_.push_back({input, continuation});
  origins_.emplace(continuation, origin);
}

void EvaluationPlan::add_case(const assertions::BehaviouralTest& test,
                              const assertions::TestCase& test_case) {
  if (test.scores_continuations()) {
    add_continuation(test_case.input, test_case.prefer, test.origin + ": expect.prefer");
    add_continuation(test_case.input, test_case.over, test.origin + ": expect.over");
    return;
  }
  add_text(test_case.input);
  if (test_case.perturbed) add_text(*test_case.perturbed);
}

EvaluationPlan EvaluationPlan::shard(int rank, int ranks) const {
  const auto part = [&](std::size_t n, int r) {
    return n * static_cast<std::size_t>(r) / static_cast<std::size_t>(ranks);
  };
  EvaluationPlan shard;
  for (std::size_t t = part(inputs_.size(), rank); t < part(inputs_.size(), rank + 1); ++t)
    shard.add_input(inputs_[t]);
  for (std::size_t q = part(queries_.size(), rank); q < part(queries_.size(), rank + 1); ++q)
    shard.add_continuation(queries_[q].input, queries_[q].continuation,
                           origins_.at(queries_[q].continuation));
  return shard;
}

void FamilyOutputs::merge(FamilyOutputs other) {
  for (auto& [model, outputs] : other.by_model_) {
    std::map<std::string, assertions::ModelOutput>& mine = by_model_[model];
    for (auto& [input, output] : outputs) {
      auto [at, inserted] = mine.try_emplace(input, std::move(output));
      if (inserted) continue;
      at->second.continuation_logprobs.merge(output.continuation_logprobs);
      at->second.continuation_tokens.merge(output.continuation_tokens);
      if (!at->second.is_classifier()) {
        output.continuation_logprobs = std::move(at->second.continuation_logprobs);
        output.continuation_tokens = std::move(at->second.continuation_tokens);
        at->second = std::move(output);
      }
    }
  }
}

Result<FamilyOutputs> evaluate_models(const StoredFamily& family, runtime::Backend& backend,
                                      const std::vector<std::string>& models,
                                      const EvaluationPlan& plan, int chunk_size) {
  std::vector<std::string> classifier_names, lm_names;
  std::vector<runtime::EvaluatedModel> classifiers;
  std::vector<runtime::ScoredModel> language_models;
  for (const std::string& name : models) {
    if (const runtime::ScoredModel* lm = family.language_model(name)) {
      SCION_RETURN_IF_ERROR(check_continuations_fit(*lm, plan));
      lm_names.push_back(name);
      language_models.push_back(*lm);
    }
    if (const runtime::EvaluatedModel* classifier = family.classifier(name)) {
      classifier_names.push_back(name);
      classifiers.push_back(*classifier);
    }
  }
  const runtime::EvaluationOptions options{.chunk_size = chunk_size};
  FamilyOutputs outputs;
  if (!classifiers.empty() && !plan.inputs().empty()) {
    auto classified =
        runtime::FamilyEvaluator(backend).classify(classifiers, plan.inputs(), options);
    if (!classified) return classified.status();
    for (std::size_t m = 0; m < classifiers.size(); ++m)
      for (std::size_t t = 0; t < plan.inputs().size(); ++t)
        outputs.of(classifier_names[m])[plan.texts()[t]] =
            model_output(std::move((*classified)[m][t]));
  }
  if (!language_models.empty() && !plan.queries().empty()) {
    auto scores =
        runtime::ContinuationScorer(backend).score(language_models, plan.queries(), options);
    if (!scores) return scores.status();
    for (std::size_t m = 0; m < language_models.size(); ++m)
      for (std::size_t q = 0; q < plan.queries().size(); ++q) {
        const runtime::ContinuationQuery& query = plan.queries()[q];
        assertions::ModelOutput& output = outputs.of(lm_names[m])[query.input];
        output.continuation_logprobs[query.continuation] = (*scores)[m][q];
        output.continuation_tokens[query.continuation] =
            runtime::continuation_tokens(language_models[m], query.continuation);
      }
  }
  return outputs;
}

assertions::ModelOutput model_output(runtime::HeadOutput output) {
  return {.labels = std::move(output.labels),
          .probabilities = std::move(output.probabilities),
          .task = output.task,
          .values = std::move(output.values),
          .threshold = output.threshold,
          .words = std::move(output.words),
          .word_probabilities = std::move(output.word_probabilities)};
}

std::int64_t case_number(const std::string& case_id) {
  const auto slash = case_id.rfind('/');
  return std::stoll(case_id.substr(slash == std::string::npos ? 0 : slash + 1));
}

std::string describe_output(const assertions::ModelOutput& output) {
  if (output.task == spec::HeadTask::kRegression) return assertions::prediction(output);
  return fmt::format("{} ({:.2f})", assertions::prediction(output), assertions::confidence(output));
}

std::string describe_expectation(const assertions::BehaviouralTest& test,
                                 const assertions::TestCase* test_case) {
  using Kind = assertions::Expectation::Kind;
  std::string expect;
  switch (test.expect.kind) {
    case Kind::kLabel:
      expect = fmt::format("label {}", fmt::join(test.expect.labels, " or "));
      break;
    case Kind::kNotLabel:
      expect = fmt::format("label not {}", fmt::join(test.expect.labels, " or "));
      break;
    case Kind::kPredicate:
      expect = "predicate holds";
      break;
    case Kind::kPrefer: {
      const char* score =
          test.expect.score == assertions::Expectation::Score::kSum ? "log p" : "mean log p";
      expect = fmt::format(
          "{}(\"{}\") > {}(\"{}\"){}", score, test_case ? test_case->prefer : test.expect.prefer,
          score, test_case ? test_case->over : test.expect.over,
          test.expect.margin != 0.0 ? fmt::format(" + {}", test.expect.margin) : "");
      break;
    }
    case Kind::kNone:
      break;
  }
  std::string what;
  if (test.type == assertions::TestType::kInv) what = "prediction unchanged under perturbation";
  if (test.direction)
    what = fmt::format("p({}) {} under perturbation",
                       test.direction->quantity == assertions::Direction::Quantity::kLabel
                           ? test.direction->label
                           : "predicted label",
                       test.direction->increase ? "does not decrease" : "does not increase");
  if (!expect.empty() && test.type == assertions::TestType::kDir) expect = "perturbed " + expect;
  if (what.empty()) return expect;
  return expect.empty() ? what : what + "; " + expect;
}

}  // namespace scion::workbench
