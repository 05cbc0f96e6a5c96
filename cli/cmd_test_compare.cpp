// `scion test --compare A B`: the cases whose outcome differs between two stored test runs
// (workbench/test_comparison.h), as a table or --json.
#include <fmt/format.h>

#include <iostream>

#include "assertions/statistics.h"
#include "cli/cmd_lineage_support.h"
#include "cli/cmd_test.h"
#include "cli/command_context.h"
#include "cli/exit_codes.h"
#include "cli/output.h"
#include "workbench/test_comparison.h"

namespace scion::cli {
namespace {

// A side as named, with the version `lineage versions` lists and the test run read:
// "news-lora@2 (version @2, test run 8)".
std::string side_label(const workbench::ComparedSide& side) {
  std::string version = side.version_run ? fmt::format("version @{}", *side.version_run)
                                         : "version " + side.model_version.substr(0, 12);
  if (side.current) version += ", the current one";
  return fmt::format("{} ({}; test run {})", side.named, version, side.run);
}

std::string outcome(bool passed, const std::string& output) {
  return fmt::format("{} ({})", passed ? "pass" : "FAIL", output);
}

// How sure the comparison is (assertions/statistics.h): each side's failure rate over the
// cases both judged with its Wilson 95% interval, and McNemar's exact test on the cases
// that differ, so "2 pass only on a, 3 only on b" is not read as a finding.
struct ComparisonStatistics {
  std::size_t pass_only_a = 0, pass_only_b = 0;
  assertions::Interval interval_a, interval_b;
  double p_value = 1.0;
  bool significant = false;
};

ComparisonStatistics comparison_statistics(const workbench::TestComparison& c) {
  ComparisonStatistics s;
  for (const workbench::OutcomeDifference& d : c.differ)
    (d.passed_a ? s.pass_only_a : s.pass_only_b)++;
  s.interval_a = assertions::wilson_interval(c.failed_a, c.compared);
  s.interval_b = assertions::wilson_interval(c.failed_b, c.compared);
  s.p_value = assertions::mcnemar_exact_p_value(s.pass_only_a, s.pass_only_b);
  s.significant = s.p_value < assertions::kSignificanceLevel;
  return s;
}

nlohmann::json statistics_json(const workbench::TestComparison& c) {
  const ComparisonStatistics s = comparison_statistics(c);
  const auto side = [&c](std::size_t failures, const assertions::Interval& interval) {
    return nlohmann::json{
        {"failures", failures},
        {"failure_rate", c.compared ? nlohmann::json(static_cast<double>(failures) /
                                                     static_cast<double>(c.compared))
                                    : nlohmann::json(nullptr)},
        {"wilson_95", {interval.low, interval.high}}};
  };
  return {{"a", side(c.failed_a, s.interval_a)},
          {"b", side(c.failed_b, s.interval_b)},
          {"pass_only_a", s.pass_only_a},
          {"pass_only_b", s.pass_only_b},
          {"mcnemar_p", s.p_value},
          {"significant", s.significant}};
}

std::string rate_with_interval(std::size_t failures, std::size_t cases,
                               const assertions::Interval& interval) {
  return fmt::format("{} of {} fail ({:.1f}%, 95% interval {:.1f}-{:.1f}%)", failures, cases,
                     100.0 * static_cast<double>(failures) / static_cast<double>(cases),
                     100.0 * interval.low, 100.0 * interval.high);
}

void print_statistics_text(const workbench::TestComparison& c) {
  if (c.compared == 0) {
    std::cout << "no case was judged on both sides: nothing to test\n";
    return;
  }
  const ComparisonStatistics s = comparison_statistics(c);
  std::cout << fmt::format("failure rates over the {} cases both judged: a {}; b {}\n", c.compared,
                           rate_with_interval(c.failed_a, c.compared, s.interval_a),
                           rate_with_interval(c.failed_b, c.compared, s.interval_b));
  std::cout << fmt::format(
      "McNemar's exact test on the {} cases that differ ({} pass only on a, {} only on b): "
      "p = {:.4g}, {}\n",
      s.pass_only_a + s.pass_only_b, s.pass_only_a, s.pass_only_b, s.p_value,
      s.significant ? "a significant difference at 0.05"
                    : "not significant at 0.05 (the difference may be noise)");
}

void print_comparison_json(const workbench::TestComparison& c) {
  const auto side = [](const workbench::ComparedSide& s) {
    return nlohmann::json{{"named", s.named},
                          {"model", s.model},
                          {"run", s.run},
                          {"recipe_hash", s.model_version},
                          {"version", s.version_run ? nlohmann::json(*s.version_run) : nullptr}};
  };
  nlohmann::json differ = nlohmann::json::array();
  for (const workbench::OutcomeDifference& d : c.differ)
    differ.push_back({{"test", d.test},
                      {"case", d.case_index},
                      {"input", d.input},
                      {"expected", d.expected},
                      {"a", {{"passed", d.passed_a}, {"output", d.output_a}}},
                      {"b", {{"passed", d.passed_b}, {"output", d.output_b}}}});
  print_json({{"models", nlohmann::json::array({side(c.a), side(c.b)})},
              {"compared", c.compared},
              {"differ", differ},
              {"only_in_a", c.only_in_a},
              {"only_in_b", c.only_in_b},
              {"statistics", statistics_json(c)}});
}

void print_comparison_text(const workbench::TestComparison& c) {
  std::cout << fmt::format("comparing {} (a) with {} (b)\n", side_label(c.a), side_label(c.b));
  const std::string& a = c.a.named;
  const std::string& b = c.b.named;
  std::size_t fixed = 0;
  for (const workbench::OutcomeDifference& d : c.differ) {
    if (d.passed_b) ++fixed;
    std::cout << fmt::format("{}[{}] \"{}\" expects {}\n  a: {}\n  b: {}\n", d.test, d.case_index,
                             terminal_text(d.input), terminal_text(d.expected),
                             terminal_text(outcome(d.passed_a, d.output_a)),
                             terminal_text(outcome(d.passed_b, d.output_b)));
  }
  std::cout << fmt::format("{} of {} cases differ: {} pass only on {} (b), {} only on {} (a)",
                           c.differ.size(), c.compared, fixed, b, c.differ.size() - fixed, a);
  if (c.only_in_a + c.only_in_b > 0)
    std::cout << fmt::format(
        "; not compared: {} cases only in a, {} only in b (different "
        "tests or inputs)",
        c.only_in_a, c.only_in_b);
  std::cout << "\n";
  print_statistics_text(c);
}

}  // namespace

int run_test_comparison(const GlobalOptions& global, const TestOptions& options) {
  if (!options.models.empty() || !options.junit_path.empty() || !options.violations_path.empty())
    return fail(invalid_argument(
        "--compare reads stored results and takes no models, --junit or --export-violations; "
        "name the two sides as --compare A B"));
  auto context = open_store_context(global, workbench::StoreAccess::kRead);
  if (!context.is_ok()) return fail(context.status());
  lineage::LineageStore& store = (*context)->store();
  auto a = workbench::resolve_compared_side(store, options.compare[0]);
  if (!a) return fail(a.status());
  auto b = workbench::resolve_compared_side(store, options.compare[1]);
  if (!b) return fail(b.status());
  auto comparison = workbench::compare_test_runs(store, *a, *b);
  if (!comparison) return fail(comparison.status());
  if (global.json)
    print_comparison_json(*comparison);
  else
    print_comparison_text(*comparison);
  return kExitOk;
}

}  // namespace scion::cli
