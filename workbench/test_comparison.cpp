// Comparing two stored test runs case by case (workbench/test_comparison.h).
#include "workbench/test_comparison.h"

#include <fmt/format.h>

#include <charconv>
#include <map>
#include <tuple>

#include "workbench/model_lookup.h"

namespace scion::workbench {
namespace {

using CaseKey = std::tuple<std::string, std::int64_t, std::string>;  // test, case, input

Result<std::map<CaseKey, lineage::TestCaseResult>> cases_of(lineage::LineageStore& store,
                                                            const ComparedSide& side) {
  auto rows = store.test_results(side.model, side.model_version);
  if (!rows) return rows.status();
  std::map<CaseKey, lineage::TestCaseResult> cases;
  for (lineage::TestCaseResult& r : *rows)
    if (r.run_id == side.run) cases.emplace(CaseKey{r.test, r.case_index, r.input}, std::move(r));
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
  const std::size_t at = named.find('@');
  ComparedSide side;
  side.model = named.substr(0, at);
  std::optional<std::int64_t> wanted;
  if (at != std::string::npos) {
    const std::string run = named.substr(at + 1);
    std::int64_t id = 0;
    const auto [end, ec] = std::from_chars(run.data(), run.data() + run.size(), id);
    if (ec != std::errc() || end != run.data() + run.size() || id <= 0)
      return invalid_argument(fmt::format(
          "'{}' is not MODEL or MODEL@RUN with RUN a test run id (see 'scion lineage log {}')",
          named, side.model));
    wanted = id;
  }
  auto model = find_stored_model(store, side.model);
  if (!model) return model.status();
  auto runs = store.runs(side.model, 0);  // newest first
  if (!runs) return runs.status();
  for (const lineage::RunRecord& r : *runs) {
    const bool finished_test =
        r.kind == lineage::RunKind::kTest && r.status == lineage::RunStatus::kFinished;
    if (finished_test && (!wanted || r.id == *wanted)) {
      side.run = r.id;
      side.model_version = r.recipe_hash;
      return side;
    }
  }
  if (!wanted)
    return not_found(fmt::format("'{}' has no test run in the store; run 'scion test {}' first",
                                 side.model, side.model));
  return not_found(fmt::format("run {} is not a finished test run of '{}' (its test runs: {})",
                               *wanted, side.model, test_run_list(*runs)));
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
