// `scion test [MODEL...]`: runs every behavioural test and model assertion of the spec on
// the trained family in one co-batched pass (classifiers on texts, language models on
// (input, continuation) pairs), judges the cases, records every case result and
// violation against the model version (recipe hash) under a run of kind `test`, and
// reports a family matrix (tests × models, failure rates and their change since each
// model's previous test run), failing examples, and the most severe violations.
#include "cli/cmd_test.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <iostream>
#include <set>

#include "assertions/junit_writer.h"
#include "cli/cmd_lineage_support.h"
#include "cli/commands.h"
#include "cli/exit_codes.h"
#include "cli/output.h"
#include "cli/output_path.h"
#include "lineage/spec_records.h"
#include "workbench/behaviour_suite.h"
#include "workbench/model_lookup.h"
#include "workbench/stored_family.h"

namespace scion::cli {
namespace {

// One test judged on one model, with what the report needs beside the summary.
struct JudgedTest {
  assertions::TestResult result;
  std::optional<double> previous_rate;  // the model's previous test run, same test
  std::string note;                     // why the test ran without its parent comparison
  nlohmann::json scores;                // language-model tests: each case's log-likelihoods
};

struct Violation {
  lineage::AssertionViolation record;
  double severity = 0;
};

// What one run of the command computes and reports.
class TestSession {
 public:
  TestSession(const GlobalOptions& global, const TestOptions& options, spec::Workspace ws,
              std::unique_ptr<lineage::LineageStore> store)
      : global_(global),
        options_(options),
        ws_(std::move(ws)),
        store_(std::move(store)),
        backend_(runtime::make_cpu_backend()),
        family_(ws_, *store_, *backend_) {}

  int run();

 private:
  Status check_arguments();
  Status select_models();
  Status plan_and_evaluate();
  Status judge_tests();
  Status check_assertions();
  Status record();
  void report();
  Status write_files();
  const spec::Model* comparable_parent(const std::string& model) const;
  std::string no_parent_reason(const std::string& model) const;
  bool tested(const std::string& model) const;

  const GlobalOptions& global_;
  const TestOptions& options_;
  spec::Workspace ws_;
  std::unique_ptr<lineage::LineageStore> store_;
  std::unique_ptr<runtime::Backend> backend_;
  workbench::StoredFamily family_;
  workbench::BehaviourSuite suite_;
  std::vector<std::string> models_;  // selected, spec order
  workbench::EvaluationPlan plan_;
  // The inputs assertions watch: every input of the tests of each kind, sorted.
  std::map<workbench::ModelKind, std::vector<std::string>> monitored_;
  workbench::FamilyOutputs outputs_;
  std::vector<JudgedTest> judged_;                                         // test-major, then model
  std::map<std::string, std::vector<lineage::TestCaseResult>> case_rows_;  // by model
  std::vector<Violation> violations_;
  std::map<std::string, std::int64_t> run_ids_;
  std::filesystem::path junit_file_, violations_file_;  // checked; empty when not asked for
};

// The parent, when it is of the model's kind (a regression or an assertion compares
// like with like); nullptr for a base or a parent of the other kind.
const spec::Model* TestSession::comparable_parent(const std::string& model) const {
  const spec::Model* m = ws_.find_model(model);
  if (m->is_base()) return nullptr;
  const spec::Model* parent = ws_.find_model(m->from);
  return workbench::model_kind(ws_, *parent) == workbench::model_kind(ws_, *m) ? parent : nullptr;
}

std::string TestSession::no_parent_reason(const std::string& model) const {
  const spec::Model* m = ws_.find_model(model);
  if (m->is_base()) return "a base has no parent";
  return "the parent '" + m->from + "' is not a " +
         workbench::kind_name(workbench::model_kind(ws_, *m)) + " like it";
}

bool TestSession::tested(const std::string& model) const {
  for (const workbench::CompiledTest& t : suite_.tests)
    if (workbench::applies(ws_, t.test, model)) return true;
  for (const assertions::ModelAssertion& a : suite_.assertions)
    if (workbench::applies(ws_, a, model)) return true;
  return false;
}

// Before any work: a misspelt model or a report that cannot be written should not cost a
// test run first.
Status TestSession::check_arguments() {
  for (const std::string& name : options_.models)
    if (auto model = workbench::find_spec_model(ws_, name); !model) return model.status();
  const std::filesystem::path store = global_.store_path();
  if (!options_.junit_path.empty()) {
    auto junit = checked_output_path(options_.junit_path, store, options_.force, "--junit");
    if (!junit) return junit.status();
    junit_file_ = *junit;
  }
  if (!options_.violations_path.empty()) {
    auto violations =
        checked_output_path(options_.violations_path, store, options_.force, "--export-violations");
    if (!violations) return violations.status();
    violations_file_ = *violations;
  }
  return Status::ok();
}

Status TestSession::select_models() {
  for (const std::string& name : options_.models) {
    if (options_.only_tested && !tested(name)) continue;
    models_.push_back(name);
  }
  if (options_.models.empty())
    for (const spec::Model& m : ws_.models)
      if (tested(m.name)) models_.push_back(m.name);
  if (models_.empty() && options_.only_tested) return Status::ok();
  if (models_.empty())
    return invalid_argument("no test or assertion of " + ws_.spec_path.string() +
                            " applies to any model: label tests need a classifier, `prefer` "
                            "tests a language model");
  return family_.load(models_);
}

// Collects every text a selected classifier (or a parent a comparison needs) must see and
// every (input, continuation) pair a language model must score, loads those parents, and
// evaluates all of them in one pass.
Status TestSession::plan_and_evaluate() {
  std::set<std::string> needed(models_.begin(), models_.end());
  std::set<workbench::ModelKind> kinds;
  for (const std::string& m : needed) kinds.insert(workbench::model_kind(ws_, *ws_.find_model(m)));
  for (const workbench::CompiledTest& t : suite_.tests) {
    const workbench::ModelKind kind = workbench::kind_of(t.test);
    if (!kinds.count(kind)) continue;
    for (const assertions::TestCase& c : t.cases.cases) {
      monitored_[kind].push_back(c.input);
      plan_.add_case(t.test, c);
    }
    if (t.test.regression_parent)
      for (const std::string& m : models_)
        if (workbench::applies(ws_, t.test, m))
          if (const spec::Model* parent = comparable_parent(m)) needed.insert(parent->name);
  }
  for (auto& [kind, inputs] : monitored_) {
    std::sort(inputs.begin(), inputs.end());
    inputs.erase(std::unique(inputs.begin(), inputs.end()), inputs.end());
  }
  // Assertions watch the models' outputs on every test input of their kind.
  for (const assertions::ModelAssertion& a : suite_.assertions) {
    const std::vector<std::string>& inputs = monitored_[workbench::kind_of(a)];
    if (const assertions::Perturbation* p = a.perturbation())
      for (const std::string& text : inputs)
        if (auto perturbed = p->apply(text, 0)) plan_.add_text(*perturbed);
    for (const auto& [name, continuation] : a.continuations())
      for (const std::string& input : inputs)
        plan_.add_continuation(input, continuation, a.origin() + ": continuations." + name);
    if (a.needs_parent())
      for (const std::string& m : models_)
        if (workbench::applies(ws_, a, m))
          if (const spec::Model* parent = comparable_parent(m)) needed.insert(parent->name);
  }
  const std::vector<std::string> evaluated(needed.begin(), needed.end());
  SCION_RETURN_IF_ERROR(family_.load(evaluated));
  auto outputs =
      workbench::evaluate_models(family_, *backend_, evaluated, plan_, options_.chunk_size);
  if (!outputs) return outputs.status();
  outputs_ = std::move(*outputs);
  return Status::ok();
}

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

Status TestSession::judge_tests() {
  for (const workbench::CompiledTest& t : suite_.tests) {
    const bool lm = workbench::kind_of(t.test) == workbench::ModelKind::kLanguageModel;
    for (const std::string& model : models_) {
      if (!workbench::applies(ws_, t.test, model)) continue;
      JudgedTest judged;
      if (lm) judged.scores = nlohmann::json::array();
      const spec::Model* parent = t.test.regression_parent ? comparable_parent(model) : nullptr;
      assertions::BehaviouralTest test = t.test;
      if (test.regression_parent && !parent) {
        test.regression_parent = false;
        judged.note = "regression: parent not applied: " + no_parent_reason(model);
      }
      std::vector<assertions::Verdict> verdicts;
      for (const assertions::TestCase& c : t.cases.cases) {
        assertions::CaseOutputs o{.original = &outputs_.at(model, c.input)};
        if (c.perturbed) o.perturbed = &outputs_.at(model, *c.perturbed);
        if (parent) {
          o.parent = &outputs_.at(parent->name, c.input);
          if (c.perturbed) o.parent_perturbed = &outputs_.at(parent->name, *c.perturbed);
        }
        auto verdict = assertions::judge_case(test, c, o);
        if (!verdict)
          return Status(verdict.status().code(),
                        t.test.origin + " on model '" + model + "': " + verdict.status().message());
        // A preference's reason gives both log-likelihoods and how they compare.
        std::string output = lm ? verdict->reason : workbench::describe_output(*o.original);
        if (o.perturbed) output += " -> " + workbench::describe_output(*o.perturbed);
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
        row.model_version = ws_.find_model(model)->recipe_hash;
        row.test = t.test.name;
        row.case_index = workbench::case_number(c.id);
        row.input = c.perturbed ? c.input + " -> " + *c.perturbed : c.input;
        row.expected = workbench::describe_expectation(t.test, &c);
        row.output = output;
        row.passed = verdict->outcome != assertions::Outcome::kFail;
        case_rows_[model].push_back(std::move(row));
        verdicts.push_back(std::move(*verdict));
      }
      judged.result = assertions::summarize(
          test, model, t.cases, verdicts, static_cast<std::size_t>(std::max(0, options_.examples)));
      judged_.push_back(std::move(judged));
    }
  }
  return Status::ok();
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

Status TestSession::check_assertions() {
  for (const assertions::ModelAssertion& a : suite_.assertions) {
    for (const std::string& model : models_) {
      if (!workbench::applies(ws_, a, model)) continue;
      const spec::Model* parent = a.needs_parent() ? comparable_parent(model) : nullptr;
      if (a.needs_parent() && !parent) {
        print_note("assertion '" + a.name() + "' skipped on '" + model +
                   "': it compares with the parent, and " + no_parent_reason(model));
        continue;
      }
      for (const std::string& text : monitored_[workbench::kind_of(a)]) {
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
        violations_.push_back(std::move(v));
      }
    }
  }
  std::stable_sort(violations_.begin(), violations_.end(),
                   [](const Violation& a, const Violation& b) { return a.severity > b.severity; });
  return Status::ok();
}

// Reads each model's previous test run (for the matrix's change column), then records this
// run's case results and violations under a new run of kind test (unless --no-record).
Status TestSession::record() {
  for (const std::string& model : models_) {
    const spec::Model& m = *ws_.find_model(model);
    auto runs = store_->runs(model, 0);
    if (!runs) return runs.status();
    std::optional<std::int64_t> previous;
    for (const lineage::RunRecord& r : *runs)
      if (r.kind == lineage::RunKind::kTest && r.status == lineage::RunStatus::kFinished) {
        previous = r.id;
        break;
      }
    if (previous) {
      auto rows = store_->test_results(model, "");
      if (!rows) return rows.status();
      std::map<std::string, std::pair<int, int>> counts;  // test -> (failed, cases)
      for (const lineage::TestCaseResult& r : *rows)
        if (r.run_id == previous) {
          counts[r.test].second++;
          if (!r.passed) counts[r.test].first++;
        }
      for (JudgedTest& j : judged_)
        if (j.result.model == model)
          if (auto it = counts.find(j.result.test); it != counts.end() && it->second.second > 0)
            j.previous_rate = double(it->second.first) / it->second.second;
    }
    if (!options_.record) continue;
    lineage::RunStart start;
    start.kind = lineage::RunKind::kTest;
    start.recipe_hash = m.recipe_hash;
    auto run_id = store_->start_run(lineage::model_record_for(ws_, m), start);
    if (!run_id) return run_id.status();
    run_ids_[model] = *run_id;
    std::vector<lineage::TestCaseResult>& rows = case_rows_[model];
    for (lineage::TestCaseResult& r : rows) r.run_id = *run_id;
    std::vector<lineage::AssertionViolation> flagged;
    for (Violation& v : violations_)
      if (v.record.model == model) {
        v.record.run_id = *run_id;
        flagged.push_back(v.record);
      }
    Status status = store_->record_test_results(rows);
    if (status.is_ok()) status = store_->record_assertion_violations(flagged);
    (void)store_->finish_run(
        *run_id, status.is_ok() ? lineage::RunStatus::kFinished : lineage::RunStatus::kFailed,
        status.message());
    SCION_RETURN_IF_ERROR(status);
  }
  return Status::ok();
}

bool exceeded(const assertions::TestResult& r) {
  return r.cases > 0 && r.failure_rate > r.max_failure_rate;
}

nlohmann::json violation_json(const Violation& v) {
  return {{"model", v.record.model},
          {"assertion", v.record.assertion},
          {"input", v.record.input},
          {"severity", v.severity},
          {"detail", v.record.detail},
          {"run", v.record.run_id ? nlohmann::json(*v.record.run_id) : nlohmann::json()}};
}

// The label a classifier gave, or the log-likelihoods a language model gave.
std::string describe_violation(const nlohmann::json& detail) {
  if (!detail.contains("log_likelihoods")) return detail.value("label", std::string());
  std::vector<std::string> scores;
  for (const auto& [name, value] : detail["log_likelihoods"].items())
    scores.push_back(fmt::format("lm.{} {:.3f}", name, value.get<double>()));
  return fmt::format("{}", fmt::join(scores, ", "));
}

std::string rate_cell(const JudgedTest& j) {
  std::string cell = fmt::format("{:.0f}%", 100 * j.result.failure_rate);
  if (j.result.cases == 0) cell = "no cases";
  if (j.previous_rate) {
    const double delta = 100 * (j.result.failure_rate - *j.previous_rate);
    cell += std::abs(delta) < 0.05 ? " (=)" : fmt::format(" ({:+.0f})", delta);
  }
  if (exceeded(j.result)) cell += " FAIL";
  return cell;
}

void TestSession::report() {
  const std::size_t top = 10;
  if (global_.json) {
    nlohmann::json tests = nlohmann::json::array(), violations = nlohmann::json::array();
    for (const JudgedTest& j : judged_) {
      const auto& r = j.result;
      nlohmann::json examples = nlohmann::json::array();
      for (const auto& e : r.examples)
        examples.push_back({{"case", e.case_id},
                            {"input", e.input},
                            {"perturbed", e.perturbed},
                            {"reason", e.reason}});
      nlohmann::json t = {{"test", r.test},
                          {"model", r.model},
                          {"type", r.type},
                          {"capability", r.capability},
                          {"cases", r.cases},
                          {"failures", r.failures},
                          {"inherited", r.inherited},
                          {"not_applicable", r.not_applicable},
                          {"failure_rate", r.failure_rate},
                          {"max_failure_rate", r.max_failure_rate},
                          {"passed", r.passed},
                          {"exceeded", exceeded(r)},
                          {"examples", examples},
                          {"previous_failure_rate",
                           j.previous_rate ? nlohmann::json(*j.previous_rate) : nlohmann::json()}};
      if (!j.note.empty()) t["note"] = j.note;
      if (!j.scores.is_null()) t["scores"] = j.scores;
      tests.push_back(t);
    }
    for (std::size_t i = 0; i < violations_.size() && i < top; ++i)
      violations.push_back(violation_json(violations_[i]));
    print_json({{"models", models_},
                {"runs", run_ids_},
                {"tests", tests},
                {"violations", {{"total", violations_.size()}, {"top", violations}}}});
    return;
  }
  const bool tty = stdout_is_tty();
  // The family matrix: tests as rows, models as columns.
  std::size_t name_width = 4;
  for (const workbench::CompiledTest& t : suite_.tests)
    name_width = std::max(name_width, t.test.name.size());
  std::map<std::pair<std::string, std::string>, const JudgedTest*> cell;
  for (const JudgedTest& j : judged_) cell[{j.result.test, j.result.model}] = &j;
  std::vector<std::size_t> widths;
  for (const std::string& m : models_) {
    std::size_t w = m.size();
    for (const workbench::CompiledTest& t : suite_.tests)
      if (auto it = cell.find({t.test.name, m}); it != cell.end())
        w = std::max(w, rate_cell(*it->second).size());
    widths.push_back(w);
  }
  std::cout << paint("family matrix", Color::kBold, tty)
            << ": failure rate per test and model (change since the model's previous test run, "
               "in points)\n";
  std::cout << fmt::format("{:<{}}", "test", name_width);
  for (std::size_t i = 0; i < models_.size(); ++i)
    std::cout << fmt::format("  {:<{}}", models_[i], widths[i]);
  std::cout << "\n";
  for (const workbench::CompiledTest& t : suite_.tests) {
    std::cout << fmt::format("{:<{}}", t.test.name, name_width);
    for (std::size_t i = 0; i < models_.size(); ++i) {
      auto it = cell.find({t.test.name, models_[i]});
      const std::string text = it == cell.end() ? "-" : rate_cell(*it->second);
      const Color color = it == cell.end()               ? Color::kDim
                          : exceeded(it->second->result) ? Color::kRed
                                                         : Color::kGreen;
      std::cout << "  " << paint(fmt::format("{:<{}}", text, widths[i]), color, tty);
    }
    std::cout << "\n";
  }
  std::cout << "\n";
  for (const JudgedTest& j : judged_) {
    const auto& r = j.result;
    std::cout << fmt::format("{} on {} [{} {}]: {} cases, {} failures ({:.1f}%, allowed {:.1f}%)",
                             paint(r.test, Color::kBold, tty), r.model, r.type, r.capability,
                             r.cases, r.failures, 100 * r.failure_rate, 100 * r.max_failure_rate);
    if (r.inherited) std::cout << fmt::format(", {} inherited from the parent", r.inherited);
    if (r.not_applicable) std::cout << fmt::format(", {} inputs not applicable", r.not_applicable);
    std::cout << "  "
              << (exceeded(r) ? paint("FAIL", Color::kRed, tty) : paint("ok", Color::kGreen, tty))
              << "\n";
    if (!j.note.empty()) std::cout << "    note: " << j.note << "\n";
    for (const auto& e : r.examples)
      std::cout << "    " << e.case_id << ": \"" << e.input << "\""
                << (e.perturbed.empty() ? "" : " -> \"" + e.perturbed + "\"") << ": " << e.reason
                << "\n";
  }
  if (!suite_.assertions.empty()) {
    std::cout << "\n"
              << paint("assertion violations", Color::kBold, tty) << ": " << violations_.size();
    if (!violations_.empty())
      std::cout << fmt::format(" (the {} most severe)", std::min(top, violations_.size()));
    std::cout << "\n";
    for (std::size_t i = 0; i < violations_.size() && i < top; ++i) {
      const Violation& v = violations_[i];
      std::cout << fmt::format("  {:.3f}  {:<16} {:<16} \"{}\" -> {}\n", v.severity, v.record.model,
                               v.record.assertion, v.record.input,
                               describe_violation(v.record.detail));
    }
  }
  std::size_t failing = 0;
  for (const JudgedTest& j : judged_) failing += exceeded(j.result) ? 1 : 0;
  std::cout << "\n"
            << (failing ? paint(fmt::format("{} of {} test results exceed their max_failure_rate",
                                            failing, judged_.size()),
                                Color::kRed, tty)
                        : paint(fmt::format("all {} test results within their max_failure_rate",
                                            judged_.size()),
                                Color::kGreen, tty))
            << "\n";
}

Status TestSession::write_files() {
  if (!junit_file_.empty()) {
    std::vector<assertions::TestResult> results;
    for (const JudgedTest& j : judged_) results.push_back(j.result);
    SCION_RETURN_IF_ERROR(assertions::write_junit_file(junit_file_, results));
  }
  if (!violations_file_.empty()) {
    std::ofstream out(violations_file_);
    for (const Violation& v : violations_) out << violation_json(v).dump() << "\n";
    if (!out)
      return io_error("cannot write " + options_.violations_path +
                      ": check the path and disk space");
  }
  return Status::ok();
}

int TestSession::run() {
  if (Status s = check_arguments(); !s.is_ok()) return fail(s);
  auto suite = workbench::compile_suite(ws_);
  if (!suite) return fail(suite.status());
  suite_ = std::move(*suite);
  if (suite_.tests.empty() && suite_.assertions.empty()) {
    if (global_.json) {
      print_json({{"models", nlohmann::json::array()}, {"tests", nlohmann::json::array()}});
    } else {
      print_note("no tests: or assertions: in " + ws_.spec_path.string() + "; nothing to test");
    }
    return kExitOk;
  }
  if (Status s = select_models(); !s.is_ok()) return fail(s);
  if (models_.empty()) return kExitOk;  // `scion run` of models no test applies to
  for (auto step :
       {&TestSession::plan_and_evaluate, &TestSession::judge_tests, &TestSession::check_assertions,
        &TestSession::record, &TestSession::write_files})
    if (Status s = (this->*step)(); !s.is_ok()) return fail(s);
  report();
  for (const JudgedTest& j : judged_)
    if (exceeded(j.result)) return kExitFailures;
  return kExitOk;
}

}  // namespace

int run_behavioural_tests(const GlobalOptions& global, const TestOptions& options) {
  auto ws = load_workspace_or_report(global);
  if (!ws) return kExitUsage;
  auto store = options.record ? open_store(global, /*create=*/false) : open_store_read_only(global);
  if (!store) return fail(store.status());  // a missing store's message says to run `scion run`
  TestSession session(global, options, std::move(*ws), std::move(*store));
  return session.run();
}

void add_test_command(CLI::App& app, const GlobalOptions& global, CommandAction& action) {
  static TestOptions options;
  CLI::App* cmd = app.add_subcommand(
      "test", "Run behavioural tests and model assertions on trained models, co-batched");
  cmd->add_option("models", options.models,
                  "Models to test (default: every model some test or assertion applies to)");
  cmd->add_option("--junit", options.junit_path, "Also write a JUnit XML report to FILE")
      ->option_text("FILE");
  cmd->add_option("--export-violations", options.violations_path,
                  "Write assertion violations to FILE as JSON lines, most severe first")
      ->option_text("FILE");
  cmd->add_flag("--force", options.force,
                "Replace the --junit and --export-violations files when they exist");
  cmd->add_option("--chunk-size", options.chunk_size,
                  "Texts or (input, continuation) pairs per co-batched pass (default 64)")
      ->check(CLI::Range(1, 65536));
  cmd->add_flag("--no-record{false}", options.record,
                "Store nothing: the store is only read (it may be another user's, read-only)");
  cmd->add_option("--examples", options.examples,
                  "Failing examples shown per test and model (default 3)")
      ->check(CLI::Range(0, 1000));
  cmd->footer(
      "Exit status 1 when a test exceeds its max_failure_rate.\n"
      "Example: scion -C examples/sentiment test --junit report.xml");
  cmd->callback([&global, &action] {
    action = [&global] { return run_behavioural_tests(global, options); };
  });
}

}  // namespace scion::cli
