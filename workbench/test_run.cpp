#include "workbench/test_run.h"

#include <algorithm>
#include <set>

#include "lineage/spec_records.h"
#include "workbench/model_lookup.h"
#include "workbench/sharded_evaluation.h"
#include "workbench/stored_family.h"
#include "workbench/test_keys.h"

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

// A test or assertion on one model, with the key its result is stored under and, when the
// store already holds a result for that key (and --rerun is not given), that result.
struct TestPair {
  const CompiledTest* test = nullptr;
  std::string model;
  const spec::Model* parent = nullptr;  // regression: parent, when comparable
  lineage::TestOutcomeKey key;
  std::optional<lineage::TestOutcome> stored;
};
struct AssertionPair {
  const assertions::ModelAssertion* assertion = nullptr;
  std::string model;
  const spec::Model* parent = nullptr;
  lineage::TestOutcomeKey key;
  std::optional<lineage::TestOutcome> stored;
};

// One run: the models it tests, which results the store holds, the outputs of one pass
// over what it does not, and what it finds.
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
  void collect_monitored();
  Status key_pairs();
  Status plan_and_evaluate();
  Status judge_tests();
  Status reuse_test(const TestPair& pair, JudgedTest& judged);
  Status check_assertions();
  Status check_assertion(const AssertionPair& pair);
  Status reuse_violations(const AssertionPair& pair);
  Status previous_rates();
  Status record();
  const spec::Model* comparable_parent(const std::string& model) const;
  std::string no_parent_reason(const std::string& model) const;
  bool tested(const std::string& model) const;
  const std::string& version_of(const std::string& model) const {
    return ws_.find_model(model)->recipe_hash;
  }

  const spec::Workspace& ws_;
  lineage::LineageStore& store_;
  runtime::Backend& backend_;
  const BehaviourSuite& suite_;
  const TestRunRequest& request_;
  const std::string started_at_ = lineage::utc_now();
  StoredFamily family_;
  EvaluationPlan plan_;
  // The inputs assertions watch on each model: every input of the tests that apply to
  // that model, sorted (a test's inputs say nothing of models outside its `models:`).
  std::map<std::string, std::vector<std::string>> monitored_;
  std::vector<TestPair> tests_;            // test-major, then model
  std::vector<AssertionPair> assertions_;  // assertion-major, then model
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

void TestRunner::collect_monitored() {
  for (const std::string& model : run_.models) {
    std::vector<std::string>& inputs = monitored_[model];
    for (const CompiledTest& t : suite_.tests)
      if (applies(ws_, t.test, model))
        for (const assertions::TestCase& c : t.cases.cases) inputs.push_back(c.input);
  }
  for (auto& [model, inputs] : monitored_) {
    std::sort(inputs.begin(), inputs.end());
    inputs.erase(std::unique(inputs.begin(), inputs.end()), inputs.end());
  }
}

// Every (test, model) and (assertion, model) pair with its key, and the stored result of
// that key unless the request reruns everything.
Status TestRunner::key_pairs() {
  auto stored =
      [&](const lineage::TestOutcomeKey& key) -> Result<std::optional<lineage::TestOutcome>> {
    if (request_.rerun) return std::optional<lineage::TestOutcome>();
    return store_.find_test_outcome(key);
  };
  for (const CompiledTest& t : suite_.tests)
    for (const std::string& model : run_.models) {
      if (!applies(ws_, t.test, model)) continue;
      TestPair pair{.test = &t, .model = model};
      if (t.test.regression_parent) pair.parent = comparable_parent(model);
      pair.key = test_outcome_key(ws_, t, model, version_of(model),
                                  pair.parent ? pair.parent->recipe_hash : "");
      auto found = stored(pair.key);
      if (!found) return found.status();
      pair.stored = *found;
      tests_.push_back(std::move(pair));
    }
  for (const assertions::ModelAssertion& a : suite_.assertions)
    for (const std::string& model : run_.models) {
      if (!applies(ws_, a, model)) continue;
      AssertionPair pair{.assertion = &a, .model = model};
      if (a.needs_parent()) {
        pair.parent = comparable_parent(model);
        if (!pair.parent) {
          run_.notes.push_back("assertion '" + a.name() + "' skipped on '" + model +
                               "': it compares with the parent, and " + no_parent_reason(model));
          continue;
        }
      }
      pair.key = assertion_outcome_key(ws_, a, monitored_[model], model, version_of(model),
                                       pair.parent ? pair.parent->recipe_hash : "");
      auto found = stored(pair.key);
      if (!found) return found.status();
      pair.stored = *found;
      assertions_.push_back(std::move(pair));
    }
  return Status::ok();
}

// Collects every text a model whose result is not stored must see (and a parent a
// comparison needs), and every (input, continuation) pair a language model must score,
// loads those models, and evaluates all of them in one pass. Nothing to run: no pass.
Status TestRunner::plan_and_evaluate() {
  std::set<std::string> needed;
  std::set<const CompiledTest*> planned;
  for (const TestPair& p : tests_) {
    if (p.stored) continue;
    needed.insert(p.model);
    if (p.parent) needed.insert(p.parent->name);
    if (planned.insert(p.test).second)
      for (const assertions::TestCase& c : p.test->cases.cases) plan_.add_case(p.test->test, c);
  }
  for (const AssertionPair& p : assertions_) {
    if (p.stored) continue;
    needed.insert(p.model);
    if (p.parent) needed.insert(p.parent->name);
    const assertions::ModelAssertion& a = *p.assertion;
    const std::vector<std::string>& inputs = monitored_[p.model];
    for (const std::string& text : inputs) plan_.add_text(text);
    if (const assertions::Perturbation* perturbation = a.perturbation())
      for (const std::string& text : inputs)
        if (auto perturbed = perturbation->apply(text, 0)) plan_.add_text(*perturbed);
    for (const auto& [name, continuation] : a.continuations())
      for (const std::string& input : inputs)
        plan_.add_continuation(input, continuation, a.origin() + ": continuations." + name);
  }
  // Every rank computed the same keys from the same store, so they agree on this.
  if (needed.empty()) return Status::ok();
  const std::vector<std::string> evaluated(needed.begin(), needed.end());
  // Loaded here, not before: under mpirun a rank that cannot load them must still bring
  // its error to the gathering of the shards.
  Status ready = family_.load(evaluated);
  runtime::SingleProcessCommunicator solo;
  auto outputs = evaluate_models_sharded(family_, backend_, evaluated, plan_, request_.chunk_size,
                                         request_.comm ? *request_.comm : solo, ready);
  if (!outputs) return outputs.status();
  outputs_ = std::move(*outputs);
  return Status::ok();
}

// A stored result as judging it again would give it: counts from its outcome, failing
// examples from its case rows (in case order), not-applicable inputs from the cases.
Status TestRunner::reuse_test(const TestPair& pair, JudgedTest& judged) {
  const lineage::TestOutcome& o = *pair.stored;
  const assertions::BehaviouralTest& test = pair.test->test;
  auto rows = store_.test_results(pair.model, o.key.model_version);
  if (!rows) return rows.status();
  assertions::TestResult& r = judged.result;
  r.test = test.name;
  r.model = pair.model;
  r.type = std::string(assertions::test_type_name(test.type));
  r.capability = test.capability;
  r.cases = static_cast<std::size_t>(o.cases);
  r.failures = static_cast<std::size_t>(o.failed);
  r.inherited = static_cast<std::size_t>(o.inherited);
  r.not_applicable = pair.test->cases.not_applicable;
  r.max_failure_rate = test.max_failure_rate;
  r.failure_rate =
      r.cases == 0 ? 0.0 : static_cast<double>(r.failures) / static_cast<double>(r.cases);
  r.passed = r.cases > 0 && r.failure_rate <= r.max_failure_rate;
  const std::size_t max_examples = static_cast<std::size_t>(std::max(0, request_.examples));
  for (const lineage::TestCaseResult& row : *rows) {
    if (row.run_id != o.run || row.test != test.name || row.passed) continue;
    if (r.examples.size() >= max_examples) break;
    const std::string id = test.name + "/" + std::to_string(row.case_index);
    const auto c = std::find_if(pair.test->cases.cases.begin(), pair.test->cases.cases.end(),
                                [&](const assertions::TestCase& tc) { return tc.id == id; });
    if (c == pair.test->cases.cases.end()) continue;
    r.examples.push_back({id, c->input, c->perturbed.value_or(""), row.output});
  }
  if (test.regression_parent && !pair.parent)
    judged.note = "regression: parent not applied: " + no_parent_reason(pair.model);
  judged.run = o.run;
  judged.reused = true;
  return Status::ok();
}

Status TestRunner::judge_tests() {
  for (const TestPair& p : tests_) {
    if (p.stored) {
      JudgedTest judged;
      SCION_RETURN_IF_ERROR(reuse_test(p, judged));
      run_.judged.push_back(std::move(judged));
      continue;
    }
    auto judged = judge_test(*p.test, p.model, version_of(p.model), p.parent ? p.parent->name : "",
                             no_parent_reason(p.model), outputs_,
                             static_cast<std::size_t>(std::max(0, request_.examples)));
    if (!judged) return judged.status();
    run_.judged.push_back(std::move(*judged));
  }
  return Status::ok();
}

Status TestRunner::reuse_violations(const AssertionPair& pair) {
  auto stored = store_.assertion_violations(pair.model, pair.key.model_version);
  if (!stored) return stored.status();
  for (const lineage::AssertionViolation& v : *stored) {
    if (v.run_id != pair.stored->run || v.assertion != pair.assertion->name()) continue;
    Violation violation{.record = v, .severity = v.detail.value("severity", 0.0)};
    run_.violations.push_back(std::move(violation));
  }
  return Status::ok();
}

Status TestRunner::check_assertion(const AssertionPair& pair) {
  const assertions::ModelAssertion& a = *pair.assertion;
  const std::string& model = pair.model;
  for (const std::string& text : monitored_[model]) {
    assertions::AssertionInput input{.text = text, .output = &outputs_.at(model, text)};
    if (pair.parent) input.parent = &outputs_.at(pair.parent->name, text);
    std::optional<std::string> perturbed;
    if (const assertions::Perturbation* p = a.perturbation()) {
      perturbed = p->apply(text, 0);
      if (!perturbed) continue;  // nothing to perturb: the assertion does not apply
      input.perturbed = &outputs_.at(model, *perturbed);
    }
    auto severity = a.severity(input);
    if (!severity)
      return Status(severity.status().code(), "assertion '" + a.name() + "' on model '" + model +
                                                  "': " + severity.status().message());
    if (*severity <= 0) continue;
    nlohmann::json detail = violation_detail(a, input, *severity);
    if (perturbed) {
      detail["perturbed"] = *perturbed;
      detail["perturbed_label"] = assertions::predicted_label(*input.perturbed);
    }
    Violation v;
    v.record.model = model;
    v.record.model_version = version_of(model);
    v.record.assertion = a.name();
    v.record.input = text;
    v.record.detail = detail;
    v.severity = *severity;
    run_.violations.push_back(std::move(v));
  }
  return Status::ok();
}

Status TestRunner::check_assertions() {
  for (const AssertionPair& pair : assertions_) {
    run_.assertions_checked.push_back(
        {.assertion = pair.assertion->name(),
         .model = pair.model,
         .kind = std::string(assertions::assertion_kind_name(pair.assertion->kind()))});
    SCION_RETURN_IF_ERROR(pair.stored ? reuse_violations(pair) : check_assertion(pair));
  }
  std::stable_sort(run_.violations.begin(), run_.violations.end(),
                   [](const Violation& a, const Violation& b) { return a.severity > b.severity; });
  return Status::ok();
}

// For the matrix's change column: each result's failure rate in the newest test run of the
// model before the one that judged it (for a result judged now: before now).
Status TestRunner::previous_rates() {
  for (const std::string& model : run_.models) {
    auto rows = store_.test_results(model, "");
    if (!rows) return rows.status();
    // (test, run) -> (failed, cases)
    std::map<std::pair<std::string, std::int64_t>, std::pair<int, int>> counts;
    for (const lineage::TestCaseResult& r : *rows) {
      if (!r.run_id) continue;
      auto& c = counts[{r.test, *r.run_id}];
      c.second++;
      if (!r.passed) c.first++;
    }
    for (JudgedTest& j : run_.judged) {
      if (j.result.model != model) continue;
      for (auto it = counts.rbegin(); it != counts.rend(); ++it) {
        const auto& [test, run] = it->first;
        if (test != j.result.test || (j.reused && run >= j.run) || it->second.second == 0) continue;
        j.previous_rate = double(it->second.first) / it->second.second;
        break;
      }
    }
  }
  return Status::ok();
}

// Records the results judged now under a new run of kind test per model (unless
// --no-record): case results, violations, and each test's and assertion's keyed outcome.
// A model whose results were all reused gets no run.
Status TestRunner::record() {
  if (!request_.record) return Status::ok();
  for (const std::string& model : run_.models) {
    std::vector<lineage::TestOutcome> outcomes;
    for (const TestPair& p : tests_)
      if (p.model == model && !p.stored) outcomes.push_back({.key = p.key});
    for (const AssertionPair& p : assertions_)
      if (p.model == model && !p.stored) outcomes.push_back({.key = p.key});
    if (outcomes.empty()) continue;
    const spec::Model& m = *ws_.find_model(model);
    lineage::RunStart start;
    start.kind = lineage::RunKind::kTest;
    start.recipe_hash = m.recipe_hash;
    start.started_at = started_at_;
    auto run_id = store_.start_run(lineage::model_record_for(ws_, m), start);
    if (!run_id) return run_id.status();
    run_.run_ids[model] = *run_id;
    std::vector<lineage::TestCaseResult> rows;
    std::int64_t cases = 0;
    for (JudgedTest& j : run_.judged) {
      if (j.result.model != model || j.reused) continue;
      j.run = *run_id;
      for (lineage::TestCaseResult& r : j.rows) {
        r.run_id = *run_id;
        rows.push_back(r);
      }
      cases += static_cast<std::int64_t>(j.result.cases);
      for (lineage::TestOutcome& o : outcomes)
        if (o.key.kind == "test" && o.key.name == j.result.test) {
          o.cases = static_cast<std::int64_t>(j.result.cases);
          o.failed = static_cast<std::int64_t>(j.result.failures);
          o.inherited = static_cast<std::int64_t>(j.result.inherited);
        }
    }
    std::vector<lineage::AssertionViolation> flagged;
    for (Violation& v : run_.violations)
      if (v.record.model == model && !v.record.run_id) {
        v.record.run_id = *run_id;
        flagged.push_back(v.record);
      }
    for (lineage::TestOutcome& o : outcomes) {
      o.run = *run_id;
      if (o.key.kind != "assertion") continue;
      o.cases = static_cast<std::int64_t>(monitored_[model].size());
      o.failed = std::count_if(
          flagged.begin(), flagged.end(),
          [&](const lineage::AssertionViolation& v) { return v.assertion == o.key.name; });
    }
    Status status = store_.record_test_results(rows);
    if (status.is_ok()) status = store_.record_assertion_violations(flagged);
    if (status.is_ok()) status = store_.record_test_outcomes(outcomes);
    (void)store_.finish_run(
        *run_id, status.is_ok() ? lineage::RunStatus::kFinished : lineage::RunStatus::kFailed,
        status.message(), cases);
    SCION_RETURN_IF_ERROR(status);
  }
  return Status::ok();
}

Result<TestRun> TestRunner::run() {
  SCION_RETURN_IF_ERROR(select_models());
  if (run_.models.empty()) return std::move(run_);  // `scion run` of models no test applies to
  collect_monitored();
  SCION_RETURN_IF_ERROR(key_pairs());
  SCION_RETURN_IF_ERROR(plan_and_evaluate());
  if (request_.comm && request_.comm->rank() != 0) return std::move(run_);  // sent to rank 0
  for (auto step : {&TestRunner::judge_tests, &TestRunner::check_assertions,
                    &TestRunner::previous_rates, &TestRunner::record})
    SCION_RETURN_IF_ERROR((this->*step)());
  for (const JudgedTest& j : run_.judged) run_.reused += j.reused ? 1 : 0;
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
    // A verdict other than a pass names the outputs in its reason: stored alone, it reads
    // back as the example a fresh judgement prints, without the prediction twice.
    std::string output = lm || verdict->outcome != assertions::Outcome::kPass
                             ? verdict->reason
                             : describe_output(*o.original);
    if (!lm && verdict->outcome == assertions::Outcome::kPass && o.perturbed)
      output += " -> " + describe_output(*o.perturbed);
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
