#include "workbench/test_run.h"

#include <algorithm>
#include <set>

#include "lineage/spec_records.h"
#include "workbench/model_lookup.h"
#include "workbench/sharded_evaluation.h"
#include "workbench/stored_family.h"

namespace scion::workbench {
namespace {

// The log-likelihoods of a case's two continuations, for --json.
nlohmann::json case_scores(const assertions::TestCase& c, const assertions::ModelOutput& out) {
  return {{c.prefer, out.continuation_logprobs.at(c.prefer)},
          {c.over, out.continuation_logprobs.at(c.over)}};
}

// How many tokens each of a case's log-likelihoods sums over (score: mean divides by it).
nlohmann::json case_tokens(const assertions::TestCase& c, const assertions::ModelOutput& out) {
  return {{c.prefer, out.continuation_tokens.at(c.prefer)},
          {c.over, out.continuation_tokens.at(c.over)}};
}

const char* outcome_name(assertions::Outcome outcome) {
  switch (outcome) {
    case assertions::Outcome::kPass:
      return "pass";
    case assertions::Outcome::kFail:
      return "fail";
    case assertions::Outcome::kInherited:
      return "inherited";
  }
  return "?";
}

// What a violation record shows of the output: the label and confidence of a classifier,
// the named log-likelihoods of a language model (and the parent's, when compared).
nlohmann::json violation_detail(const assertions::ModelAssertion& a,
                                const assertions::AssertionInput& input, double severity) {
  nlohmann::json detail = {{"severity", severity},
                           {"kind", assertions::assertion_kind_name(a.kind())}};
  if (a.scores_continuations()) {
    auto named = [&a](const assertions::ModelOutput& out) {
      nlohmann::json scores = nlohmann::json::object();
      for (const auto& [name, text] : a.continuations())
        scores[name] = out.continuation_logprobs.at(text);
      return scores;
    };
    detail["log_likelihoods"] = named(*input.output);
    if (input.parent) detail["parent_log_likelihoods"] = named(*input.parent);
    return detail;
  }
  detail["label"] = assertions::predicted_label(*input.output);
  detail["confidence"] = assertions::confidence(*input.output);
  if (input.parent) detail["parent_label"] = assertions::predicted_label(*input.parent);
  return detail;
}

// One run: the models it tests, the outputs of one pass, and what it finds.
class TestRunner {
 public:
  TestRunner(const spec::Workspace& ws, lineage::LineageStore& store, runtime::Backend& backend,
             const BehaviourSuite& suite, const TestRunRequest& request)
      : ws_(ws),
        store_(store),
        backend_(backend),
        suite_(suite),
        request_(request),
        family_(ws, store, backend) {}

  Result<TestRun> run();

 private:
  Status select_models();
  Status plan_and_evaluate();
  Status judge_tests();
  Status check_assertions();
  Status record();
  const spec::Model* comparable_parent(const std::string& model) const;
  std::string no_parent_reason(const std::string& model) const;
  bool tested(const std::string& model) const;

  const spec::Workspace& ws_;
  lineage::LineageStore& store_;
  runtime::Backend& backend_;
  const BehaviourSuite& suite_;
  const TestRunRequest& request_;
  StoredFamily family_;
  EvaluationPlan plan_;
  // The inputs assertions watch: every input of the tests of each kind, sorted.
  std::map<ModelKind, std::vector<std::string>> monitored_;
  FamilyOutputs outputs_;
  TestRun run_;
};

// The parent, when it is of the model's kind (a regression or an assertion compares
// like with like); nullptr for a base or a parent of the other kind.
const spec::Model* TestRunner::comparable_parent(const std::string& model) const {
  const spec::Model* m = ws_.find_model(model);
  if (m->is_base()) return nullptr;
  const spec::Model* parent = ws_.find_model(m->from);
  return model_kind(ws_, *parent) == model_kind(ws_, *m) ? parent : nullptr;
}

std::string TestRunner::no_parent_reason(const std::string& model) const {
  const spec::Model* m = ws_.find_model(model);
  if (m->is_base()) return "a base has no parent";
  return "the parent '" + m->from + "' is not a " + kind_name(model_kind(ws_, *m)) + " like it";
}

bool TestRunner::tested(const std::string& model) const {
  for (const CompiledTest& t : suite_.tests)
    if (applies(ws_, t.test, model)) return true;
  for (const assertions::ModelAssertion& a : suite_.assertions)
    if (applies(ws_, a, model)) return true;
  return false;
}

Status TestRunner::select_models() {
  for (const std::string& name : request_.models) {
    if (request_.only_tested && !tested(name)) continue;
    run_.models.push_back(name);
  }
  if (request_.models.empty())
    for (const spec::Model& m : ws_.models)
      if (tested(m.name)) run_.models.push_back(m.name);
  if (run_.models.empty() && request_.only_tested) return Status::ok();
  if (run_.models.empty())
    return invalid_argument("no test or assertion of " + ws_.spec_path.string() +
                            " applies to any model: label tests need a classifier, `prefer` "
                            "tests a language model");
  return Status::ok();
}

// Collects every text a selected classifier (or a parent a comparison needs) must see and
// every (input, continuation) pair a language model must score, loads those parents, and
// evaluates all of them in one pass.
Status TestRunner::plan_and_evaluate() {
  std::set<std::string> needed(run_.models.begin(), run_.models.end());
  std::set<ModelKind> kinds;
  for (const std::string& m : needed) kinds.insert(model_kind(ws_, *ws_.find_model(m)));
  for (const CompiledTest& t : suite_.tests) {
    const ModelKind kind = kind_of(t.test);
    if (!kinds.count(kind)) continue;
    for (const assertions::TestCase& c : t.cases.cases) {
      monitored_[kind].push_back(c.input);
      plan_.add_case(t.test, c);
    }
    if (t.test.regression_parent)
      for (const std::string& m : run_.models)
        if (applies(ws_, t.test, m))
          if (const spec::Model* parent = comparable_parent(m)) needed.insert(parent->name);
  }
  for (auto& [kind, inputs] : monitored_) {
    std::sort(inputs.begin(), inputs.end());
    inputs.erase(std::unique(inputs.begin(), inputs.end()), inputs.end());
  }
  // Assertions watch the models' outputs on every test input of their kind.
  for (const assertions::ModelAssertion& a : suite_.assertions) {
    const std::vector<std::string>& inputs = monitored_[kind_of(a)];
    if (const assertions::Perturbation* p = a.perturbation())
      for (const std::string& text : inputs)
        if (auto perturbed = p->apply(text, 0)) plan_.add_text(*perturbed);
    for (const auto& [name, continuation] : a.continuations())
      for (const std::string& input : inputs)
        plan_.add_continuation(input, continuation, a.origin() + ": continuations." + name);
    if (a.needs_parent())
      for (const std::string& m : run_.models)
        if (applies(ws_, a, m))
          if (const spec::Model* parent = comparable_parent(m)) needed.insert(parent->name);
  }
  const std::vector<std::string> evaluated(needed.begin(), needed.end());
  // Loaded here, not before: under mpirun a rank that cannot load them must still bring
  // its error to the gathering of the shards.
  Status ready = family_.load(run_.models);
  if (ready.is_ok()) ready = family_.load(evaluated);
  runtime::SingleProcessCommunicator solo;
  auto outputs = evaluate_models_sharded(family_, backend_, evaluated, plan_, request_.chunk_size,
                                         request_.comm ? *request_.comm : solo, ready);
  if (!outputs) return outputs.status();
  outputs_ = std::move(*outputs);
  return Status::ok();
}

Status TestRunner::check_assertions() {
  for (const assertions::ModelAssertion& a : suite_.assertions) {
    for (const std::string& model : run_.models) {
      if (!applies(ws_, a, model)) continue;
      const spec::Model* parent = a.needs_parent() ? comparable_parent(model) : nullptr;
      if (a.needs_parent() && !parent) {
        run_.notes.push_back("assertion '" + a.name() + "' skipped on '" + model +
                             "': it compares with the parent, and " + no_parent_reason(model));
        continue;
      }
      run_.assertions_checked.push_back(
          {.assertion = a.name(),
           .model = model,
           .kind = std::string(assertions::assertion_kind_name(a.kind()))});
      for (const std::string& text : monitored_[kind_of(a)]) {
        assertions::AssertionInput input{.text = text, .output = &outputs_.at(model, text)};
        if (parent) input.parent = &outputs_.at(parent->name, text);
        std::optional<std::string> perturbed;
        if (const assertions::Perturbation* p = a.perturbation()) {
          perturbed = p->apply(text, 0);
          if (!perturbed) continue;  // nothing to perturb: the assertion does not apply
          input.perturbed = &outputs_.at(model, *perturbed);
        }
        auto severity = a.severity(input);
        if (!severity)
          return Status(severity.status().code(), "assertion '" + a.name() + "' on model '" +
                                                      model + "': " + severity.status().message());
        if (*severity <= 0) continue;
        nlohmann::json detail = violation_detail(a, input, *severity);
        if (perturbed) {
          detail["perturbed"] = *perturbed;
          detail["perturbed_label"] = assertions::predicted_label(*input.perturbed);
        }
        Violation v;
        v.record.model = model;
        v.record.model_version = ws_.find_model(model)->recipe_hash;
        v.record.assertion = a.name();
        v.record.input = text;
        v.record.detail = detail;
        v.severity = *severity;
        run_.violations.push_back(std::move(v));
      }
    }
  }
  std::stable_sort(run_.violations.begin(), run_.violations.end(),
                   [](const Violation& a, const Violation& b) { return a.severity > b.severity; });
  return Status::ok();
}

// Reads each model's previous test run (for the matrix's change column), then records this
// run's case results and violations under a new run of kind test (unless --no-record).
Status TestRunner::record() {
  for (const std::string& model : run_.models) {
    const spec::Model& m = *ws_.find_model(model);
    auto runs = store_.runs(model, 0);
    if (!runs) return runs.status();
    std::optional<std::int64_t> previous;
    for (const lineage::RunRecord& r : *runs)
      if (r.kind == lineage::RunKind::kTest && r.status == lineage::RunStatus::kFinished) {
        previous = r.id;
        break;
      }
    if (previous) {
      auto rows = store_.test_results(model, "");
      if (!rows) return rows.status();
      std::map<std::string, std::pair<int, int>> counts;  // test -> (failed, cases)
      for (const lineage::TestCaseResult& r : *rows)
        if (r.run_id == previous) {
          counts[r.test].second++;
          if (!r.passed) counts[r.test].first++;
        }
      for (JudgedTest& j : run_.judged)
        if (j.result.model == model)
          if (auto it = counts.find(j.result.test); it != counts.end() && it->second.second > 0)
            j.previous_rate = double(it->second.first) / it->second.second;
    }
    if (!request_.record) continue;
    lineage::RunStart start;
    start.kind = lineage::RunKind::kTest;
    start.recipe_hash = m.recipe_hash;
    auto run_id = store_.start_run(lineage::model_record_for(ws_, m), start);
    if (!run_id) return run_id.status();
    run_.run_ids[model] = *run_id;
    std::vector<lineage::TestCaseResult> rows;
    for (JudgedTest& j : run_.judged)
      if (j.result.model == model)
        for (lineage::TestCaseResult& r : j.rows) {
          r.run_id = *run_id;
          rows.push_back(r);
        }
    std::vector<lineage::AssertionViolation> flagged;
    for (Violation& v : run_.violations)
      if (v.record.model == model) {
        v.record.run_id = *run_id;
        flagged.push_back(v.record);
      }
    Status status = store_.record_test_results(rows);
    if (status.is_ok()) status = store_.record_assertion_violations(flagged);
    (void)store_.finish_run(
        *run_id, status.is_ok() ? lineage::RunStatus::kFinished : lineage::RunStatus::kFailed,
        status.message());
    SCION_RETURN_IF_ERROR(status);
  }
  return Status::ok();
}

Status TestRunner::judge_tests() {
  for (const CompiledTest& t : suite_.tests)
    for (const std::string& model : run_.models) {
      if (!applies(ws_, t.test, model)) continue;
      const spec::Model* parent = t.test.regression_parent ? comparable_parent(model) : nullptr;
      auto judged = judge_test(t, model, ws_.find_model(model)->recipe_hash,
                               parent ? parent->name : "", no_parent_reason(model), outputs_,
                               static_cast<std::size_t>(std::max(0, request_.examples)));
      if (!judged) return judged.status();
      run_.judged.push_back(std::move(*judged));
    }
  return Status::ok();
}

Result<TestRun> TestRunner::run() {
  SCION_RETURN_IF_ERROR(select_models());
  if (run_.models.empty()) return std::move(run_);  // `scion run` of models no test applies to
  SCION_RETURN_IF_ERROR(plan_and_evaluate());
  if (request_.comm && request_.comm->rank() != 0) return std::move(run_);  // sent to rank 0
  for (auto step : {&TestRunner::judge_tests,
                    &TestRunner::check_assertions, &TestRunner::record})
    SCION_RETURN_IF_ERROR((this->*step)());
  return std::move(run_);
}

}  // namespace

bool exceeded(const assertions::TestResult& r) {
  return r.cases > 0 && r.failure_rate > r.max_failure_rate;
}

Result<JudgedTest> judge_test(const CompiledTest& t, const std::string& model,
                              const std::string& model_version, const std::string& parent,
                              const std::string& no_parent_reason, const FamilyOutputs& outputs,
                              std::size_t max_examples) {
  const bool lm = kind_of(t.test) == ModelKind::kLanguageModel;
  JudgedTest judged;
  if (lm) judged.scores = nlohmann::json::array();
  assertions::BehaviouralTest test = t.test;
  if (test.regression_parent && parent.empty()) {
    test.regression_parent = false;
    judged.note = "regression: parent not applied: " + no_parent_reason;
  }
  const bool with_parent = test.regression_parent;
  std::vector<assertions::Verdict> verdicts;
  for (const assertions::TestCase& c : t.cases.cases) {
    assertions::CaseOutputs o{.original = &outputs.at(model, c.input)};
    if (c.perturbed) o.perturbed = &outputs.at(model, *c.perturbed);
    if (with_parent) {
      o.parent = &outputs.at(parent, c.input);
      if (c.perturbed) o.parent_perturbed = &outputs.at(parent, *c.perturbed);
    }
    auto verdict = assertions::judge_case(test, c, o);
    if (!verdict)
      return Status(verdict.status().code(),
                    t.test.origin + " on model '" + model + "': " + verdict.status().message());
    // A preference's reason gives both log-likelihoods and how they compare.
    std::string output = lm ? verdict->reason : describe_output(*o.original);
    if (o.perturbed) output += " -> " + describe_output(*o.perturbed);
    if (!lm && verdict->outcome != assertions::Outcome::kPass) output += ": " + verdict->reason;
    if (lm) {
      nlohmann::json entry = {{"case", c.id},
                              {"input", c.input},
                              {"log_likelihoods", case_scores(c, *o.original)},
                              {"tokens", case_tokens(c, *o.original)},
                              {"outcome", outcome_name(verdict->outcome)}};
      if (o.parent) entry["parent_log_likelihoods"] = case_scores(c, *o.parent);
      judged.scores.push_back(std::move(entry));
    }
    lineage::TestCaseResult row;
    row.model = model;
    row.model_version = model_version;
    row.test = t.test.name;
    row.case_index = case_number(c.id);
    row.input = c.perturbed ? c.input + " -> " + *c.perturbed : c.input;
    row.expected = describe_expectation(t.test, &c);
    row.output = output;
    row.passed = verdict->outcome != assertions::Outcome::kFail;
    judged.rows.push_back(std::move(row));
    verdicts.push_back(std::move(*verdict));
  }
  judged.result = assertions::summarize(test, model, t.cases, verdicts, max_examples);
  return judged;
}

Result<TestRun> run_tests(const spec::Workspace& ws, lineage::LineageStore& store,
                          runtime::Backend& backend, const BehaviourSuite& suite,
                          const TestRunRequest& request) {
  for (const std::string& name : request.models)
    if (auto model = find_spec_model(ws, name); !model) return model.status();
  return TestRunner(ws, store, backend, suite, request).run();
}

}  // namespace scion::workbench
