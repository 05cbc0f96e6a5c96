// Comparing two stored test runs case by case (workbench/test_comparison.h).
#include "workbench/test_comparison.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <tuple>

#include "workbench/model_lookup.h"
#include "workbench/model_version.h"

namespace scion::workbench {
namespace {

using CaseKey = std::tuple<std::string, std::int64_t, std::string>;  // test, case, input

// The side's cases: those of its one test run, or, for a version, each test's newest
// stored result of it (a result reused by later runs stays where it was judged).
Result<std::map<CaseKey, lineage::TestCaseResult>> cases_of(lineage::LineageStore& store,
                                                            const ComparedSide& side) {
  auto rows = store.test_results(side.model, side.model_version);
  if (!rows) return rows.status();
  std::map<std::string, std::int64_t> newest;  // test -> run
  for (const lineage::TestCaseResult& r : *rows)
    if (r.run_id) newest[r.test] = std::max(newest[r.test], *r.run_id);
  std::map<CaseKey, lineage::TestCaseResult> cases;
  for (lineage::TestCaseResult& r : *rows) {
    const bool wanted = side.single_run ? r.run_id == side.run : r.run_id == newest[r.test];
    if (wanted) cases.emplace(CaseKey{r.test, r.case_index, r.input}, std::move(r));
  }
  return cases;
}

std::string test_run_list(const std::vector<lineage::RunRecord>& runs) {
  std::string ids;
  for (const lineage::RunRecord& r : runs)
    if (r.kind == lineage::RunKind::kTest && r.status == lineage::RunStatus::kFinished)
      ids += (ids.empty() ? "" : ", ") + std::to_string(r.id);
  return ids.empty() ? "none" : ids;
}

}  // namespace

Result<ComparedSide> resolve_compared_side(lineage::LineageStore& store, const std::string& named) {
  auto ref = parse_model_ref(named);
  if (!ref) return ref.status();
  if (auto model = find_stored_model(store, ref->model); !model) return model.status();
  auto runs = store.runs(ref->model, 0);  // newest first
  if (!runs) return runs.status();
  ComparedSide side{.named = named, .model = ref->model};
  // MODEL@N with N a finished test run: that run alone.
  for (const lineage::RunRecord& r : *runs)
    if (!ref->version.empty() && std::to_string(r.id) == ref->version &&
        r.kind == lineage::RunKind::kTest && r.status == lineage::RunStatus::kFinished) {
      side.run = r.id;
      side.model_version = r.recipe_hash;
      side.single_run = true;
      auto tested = resolve_version(store, ModelRef{ref->model, r.recipe_hash});
      if (tested) {
        side.version_run = tested->run;
        side.current = tested->current;
      }
      return side;
    }
  auto version = resolve_version(store, *ref);
  if (!version) return version.status();
  side.model_version = version->recipe_hash;
  side.version_run = version->run;
  side.current = version->current;
  for (const lineage::RunRecord& r : *runs)
    if (r.kind == lineage::RunKind::kTest && r.status == lineage::RunStatus::kFinished &&
        r.recipe_hash == side.model_version) {
      side.run = r.id;  // the newest: what `lineage show` lists first
      return side;
    }
  return not_found(fmt::format(
      "'{}' ({}) has no stored test results; run 'scion test {}' on it first (its test runs: "
      "{})",
      named,
      version->current ? "its current version" : "version " + side.model_version.substr(0, 12),
      ref->model, test_run_list(*runs)));
}

Result<TestComparison> compare_test_runs(lineage::LineageStore& store, const ComparedSide& a,
                                         const ComparedSide& b) {
  auto cases_a = cases_of(store, a);
  if (!cases_a) return cases_a.status();
  auto cases_b = cases_of(store, b);
  if (!cases_b) return cases_b.status();
  TestComparison out{.a = a, .b = b};
  for (const auto& [key, ra] : *cases_a) {
    const auto it = cases_b->find(key);
    if (it == cases_b->end()) {
      ++out.only_in_a;
      continue;
    }
    const lineage::TestCaseResult& rb = it->second;
    ++out.compared;
    out.failed_a += ra.passed ? 0 : 1;
    out.failed_b += rb.passed ? 0 : 1;
    if (ra.passed != rb.passed)
      out.differ.push_back({.test = ra.test,
                            .case_index = ra.case_index,
                            .input = ra.input,
                            .expected = ra.expected,
                            .passed_a = ra.passed,
                            .passed_b = rb.passed,
                            .output_a = ra.output,
                            .output_b = rb.output});
  }
  out.only_in_b = cases_b->size() - out.compared;
  return out;
}

}  // namespace scion::workbench
