#include "workbench/family_report_builder.h"

#include <algorithm>
#include <map>
#include <set>

#include "lineage/spec_records.h"
#include "spec/spec_json.h"
#include "workbench/blame.h"
#include "workbench/lineage_views.h"
#include "workbench/model_lookup.h"

namespace scion::workbench {
namespace {

using nlohmann::json;

// The finished test runs of `version`, newest first. `runs`: newest first.
std::vector<std::int64_t> version_test_runs(const std::vector<lineage::RunRecord>& runs,
                                            const std::string& version) {
  std::vector<std::int64_t> out;
  for (const lineage::RunRecord& r : runs)
    if (r.kind == lineage::RunKind::kTest && r.status == lineage::RunStatus::kFinished &&
        r.recipe_hash == version)
      out.push_back(r.id);
  return out;
}

// A value as the spec writes it, in YAML flow: {type: adamw, lr: 0.001}. Digests are cut
// to 12 characters, as `scion lineage show` prints them.
std::string flow(const json& value) {
  if (value.is_object() || value.is_array()) {
    std::string out;
    for (const auto& [key, child] : value.items()) {
      std::string shown = flow(child);
      if (key == "digest" && shown.size() > 12) shown = shown.substr(0, 12) + "…";
      out += (out.empty() ? "" : ", ") + (value.is_object() ? key + ": " : "") + shown;
    }
    return value.is_object() ? "{" + out + "}" : "[" + out + "]";
  }
  return value.is_string() ? value.get<std::string>() : value.dump();
}

std::vector<std::pair<std::string, std::string>> recipe_fields(const json& adaptation,
                                                               const json& training) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& [key, value] : adaptation.items()) out.emplace_back("adapt." + key, flow(value));
  for (const auto& [key, value] : training.items()) out.emplace_back("train." + key, flow(value));
  return out;
}

Status add_model(lineage::LineageStore* store, const spec::Workspace* ws, const FamilyNode& node,
                 const std::map<std::string, std::string>& pinned, report::FamilyReport& report) {
  report::ReportModel m{
      .name = node.name, .parent = node.parent, .method = node.method, .status = node.status};
  json adaptation = json::object(), training = json::object();
  if (ws)
    if (const spec::Model* in_spec = ws->find_model(node.name))
      adaptation =
          lineage::model_record_for(*ws, *in_spec).adaptation;
  if (node.stored && store) {
    lineage::StoredModel s = *node.stored;
    if (auto pin = pinned.find(node.name); pin != pinned.end()) {
      auto at = store->model_at(node.name, pin->second);
      if (!at.is_ok()) return at.status();
      s = std::move(*at);
      m.status = "version " + pin->second.substr(0, 12) + " (named)";
    }
    if (s.recipe_hash) {
      m.parameters = s.parameter_count;
      m.own_parameters = s.own_count;
      m.shared_with_parent = s.shared_with_parent;
      m.recipe_hash = *s.recipe_hash;
    }
    adaptation = spec::in_spec_words(s.adaptation, "adapt");
    auto runs = store->runs(node.name, 0);
    if (!runs.is_ok()) return runs.status();
    if (auto made_by = recipe_run(*runs, s)) {
      training = training_recipe(made_by);
      auto steps = store->run_metrics(made_by->id);
      if (!steps.is_ok()) return steps.status();
      m.validation = stored_validation(*made_by, *steps);
      if (!steps->empty())
        report.curves.push_back(
            {.model = node.name, .run = made_by->id, .steps = std::move(*steps)});
    }
  }
  if (!adaptation.is_object()) adaptation = json::object();
  m.recipe = recipe_fields(adaptation, training.is_object() ? training : json::object());
  report.models.push_back(std::move(m));
  return Status::ok();
}

using CaseKey = std::pair<std::string, std::int64_t>;  // (test, case index)
using RunResults = std::map<CaseKey, const lineage::TestCaseResult*>;

// The assertion violations of version `version` of one stored model, grouped by assertion
// with the worst three of each: those of each assertion's newest check of the version, the
// newest of the test runs `tested` whose outcomes name it (runs of stores older than
// outcomes: the newest test run of the version, tested.front()).
// REQUIRES: `tested` non-empty, newest first.
Status add_violations(lineage::LineageStore& store, const std::string& model,
                      const std::string& version, const std::vector<std::int64_t>& tested,
                      report::FamilyReport& report) {
  std::map<std::string, std::int64_t> checked;
  for (std::int64_t run : tested) {
    auto outcomes = store.test_outcomes(run);
    if (!outcomes.is_ok()) return outcomes.status();
    for (const lineage::TestOutcome& o : *outcomes)
      if (o.key.kind == "assertion") checked.try_emplace(o.key.name, run);
  }
  auto violations = store.assertion_violations(model, version);
  if (!violations.is_ok()) return violations.status();
  std::map<std::string, report::ViolationGroup> groups;
  for (const lineage::AssertionViolation& v : *violations) {
    const auto it = checked.find(v.assertion);
    const std::int64_t run = it != checked.end() ? it->second : tested.front();
    if (v.run_id != run) continue;
    report::ViolationGroup& g = groups[v.assertion];
    g.assertion = v.assertion;
    g.model = model;
    g.run = run;
    g.count++;
    const double severity = v.detail.value("severity", 0.0);
    g.max_severity = std::max(g.max_severity, severity);
    g.worst.push_back(v);
  }
  for (auto& [name, g] : groups) {
    std::stable_sort(g.worst.begin(), g.worst.end(), [](const auto& a, const auto& b) {
      return a.detail.value("severity", 0.0) > b.detail.value("severity", 0.0);
    });
    g.worst.resize(std::min<std::size_t>(g.worst.size(), 3));
    report.violations.push_back(std::move(g));
  }
  return Status::ok();
}

// The matrix cells, violations and results of version `version` of one stored model: each
// test's newest stored result of that version (tests reuse stored results, so one test
// run may judge only some of them), and each cell's previous rate from the test's newest
// result before it.
Status add_test_results(lineage::LineageStore& store, const spec::Workspace* ws,
                        const std::string& model, const std::string& version,
                        report::FamilyReport& report, std::vector<lineage::TestCaseResult>& rows,
                        RunResults& newest_results) {
  auto runs = store.runs(model, 0);
  if (!runs.is_ok()) return runs.status();
  const std::vector<std::int64_t> tested = version_test_runs(*runs, version);
  if (tested.empty()) return Status::ok();
  auto stored = store.test_results(model, "");
  if (!stored.is_ok()) return stored.status();
  rows = std::move(*stored);
  std::map<std::string, std::int64_t> newest;  // test -> run judging it for `version`
  for (const lineage::TestCaseResult& r : rows)
    if (r.run_id && r.model_version == version)
      newest[r.test] = std::max(newest[r.test], *r.run_id);
  std::map<std::string, std::int64_t> before;  // test -> the newest run before that one
  for (const lineage::TestCaseResult& r : rows)
    if (r.run_id && newest.count(r.test) && *r.run_id < newest[r.test])
      before[r.test] = std::max(before[r.test], *r.run_id);
  std::map<std::string, report::MatrixCell> cells;
  std::map<std::string, std::pair<std::int64_t, std::int64_t>> previous;  // test -> (failed, cases)
  for (const lineage::TestCaseResult& r : rows) {
    if (!r.run_id || !newest.count(r.test)) continue;
    if (before.count(r.test) && *r.run_id == before[r.test]) {
      previous[r.test].second++;
      previous[r.test].first += r.passed ? 0 : 1;
    }
    if (*r.run_id != newest[r.test]) continue;
    newest_results[{r.test, r.case_index}] = &r;
    report::MatrixCell& c = cells[r.test];
    c.test = r.test;
    c.model = model;
    c.run = newest[r.test];
    c.cases++;
    if (r.passed) continue;
    c.failures++;
    if (c.failing.size() < report::kFailingCasesPerCell)
      c.failing.push_back({.case_index = r.case_index,
                           .input = r.input,
                           .expected = r.expected,
                           .output = r.output});
  }
  for (auto& [name, cell] : cells) {
    if (auto it = previous.find(name); it != previous.end() && it->second.second > 0)
      cell.previous_rate = double(it->second.first) / double(it->second.second);
    if (ws)
      for (const spec::TestSpec& t : ws->tests)
        if (t.name == name) cell.max_failure_rate = t.max_failure_rate;
    report.matrix.push_back(std::move(cell));
  }

  return add_violations(store, model, version, tested, report);
}

// For each failing cell: the model up its ancestry in which each failing case first
// appears, from the newest stored results of every ancestor.
// `scion eval` results of `model`, each marked current when it scored the version shown.
Status add_evaluations(lineage::LineageStore& store, const std::string& model,
                       const std::string& version, report::FamilyReport& report) {
  auto evaluations = store.eval_results(model, "");
  if (!evaluations.is_ok()) return evaluations.status();
  for (lineage::EvalResult& e : *evaluations) {
    const bool current = version == e.model_version;
    report.evaluations.push_back({.result = std::move(e), .current = current});
  }
  return Status::ok();
}

// The chain a failure of `model` is traced up: lineage blame's (workbench/blame.h) where
// the spec knows the model, else every stored ancestor.
std::vector<std::string> traced_chain(const spec::Workspace* ws,
                                      const std::map<std::string, std::string>& parent_of,
                                      const std::string& model) {
  std::vector<std::string> chain;
  if (const spec::Model* m = ws ? ws->find_model(model) : nullptr) {
    for (const spec::Model* link : blame_chain(*ws, *m)) chain.push_back(link->name);
    return chain;
  }
  chain.push_back(model);
  for (auto parent = parent_of.find(model); parent != parent_of.end() && !parent->second.empty();
       parent = parent_of.find(chain.back()))
    chain.push_back(parent->second);
  return chain;
}

void add_blame(const spec::Workspace* ws, const std::map<std::string, std::string>& parent_of,
               const std::map<std::string, RunResults>& results, report::FamilyReport& report) {
  for (const report::MatrixCell& cell : report.matrix) {
    if (cell.failures == 0) continue;
    report::BlameSummary blame{.model = cell.model, .test = cell.test, .failures = cell.failures};
    const std::vector<std::string> chain = traced_chain(ws, parent_of, cell.model);
    for (const auto& [key, result] : results.at(cell.model)) {
      if (key.first != cell.test || result->passed) continue;
      // The case's verdicts up the chain, until an ancestor passes it or was not tested on
      // it (no stored result for the same input: the origin is unknown).
      std::vector<bool> fails{true};
      bool known = true;
      for (std::size_t k = 1; k < chain.size() && fails.back(); ++k) {
        auto ancestor = results.find(chain[k]);
        const lineage::TestCaseResult* there = nullptr;
        if (ancestor != results.end())
          if (auto it = ancestor->second.find(key); it != ancestor->second.end())
            there = it->second;
        if (!there || there->input != result->input) {
          known = false;
          break;
        }
        fails.push_back(!there->passed);
      }
      if (known)
        blame.by_origin[chain[failure_origin(fails)]]++;
      else
        blame.untested_ancestry++;
    }
    report.blame.push_back(std::move(blame));
  }
}

}  // namespace

Result<report::FamilyReport> build_family_report(lineage::LineageStore* store,
                                                 const spec::Workspace* ws,
                                                 const ReportHeading& heading,
                                                 const std::map<std::string, std::string>& pinned) {
  report::FamilyReport report;
  report.title = heading.title;
  report.spec_note = heading.spec_note;
  report.scion_version = heading.scion_version;
  report.generated_at = lineage::utc_now();
  auto family = family_of(store, ws);
  if (!family.is_ok()) return family.status();
  const std::vector<FamilyNode>& nodes = *family;
  if (ws)
    for (const spec::Share& s : ws->shares) report.shares.push_back({s.name, s.models, s.modules});

  std::map<std::string, std::string> parent_of;
  std::map<std::string, std::vector<lineage::TestCaseResult>> rows;  // owns what results point to
  std::map<std::string, RunResults> results;
  for (const FamilyNode& node : nodes) {
    SCION_RETURN_IF_ERROR(add_model(store, ws, node, pinned, report));
    parent_of[node.name] = node.parent;
    results[node.name];
    const auto pin = pinned.find(node.name);
    const std::string version = pin != pinned.end() ? pin->second
                                : node.stored && node.stored->recipe_hash
                                    ? *node.stored->recipe_hash
                                    : "";
    if (store && node.stored && !version.empty()) {
      SCION_RETURN_IF_ERROR(add_test_results(*store, ws, node.name, version, report,
                                             rows[node.name], results[node.name]));
      SCION_RETURN_IF_ERROR(add_evaluations(*store, node.name, version, report));
    }
  }
  std::set<std::string> listed;
  if (ws)
    for (const spec::TestSpec& t : ws->tests) {
      listed.insert(t.name);
      report.tests.push_back(t.name);
    }
  for (const report::MatrixCell& c : report.matrix)
    if (listed.insert(c.test).second) report.tests.push_back(c.test);
  std::erase_if(report.tests, [&](const std::string& t) {
    return std::none_of(report.matrix.begin(), report.matrix.end(),
                        [&](const report::MatrixCell& c) { return c.test == t; });
  });
  std::stable_sort(report.violations.begin(), report.violations.end(),
                   [](const auto& a, const auto& b) { return a.max_severity > b.max_severity; });
  add_blame(ws, parent_of, results, report);
  return report;
}

}  // namespace scion::workbench
