// FamilyReport: what `scion report` shows of one family, as plain values gathered from
// the store and the spec (workbench/family_report_builder.h), ready to render
// (report/html_report.h). Rendering reads nothing else, so a test can render a report
// it builds by hand.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "lineage/records.h"

namespace scion::report {

// One model of the family tree.
struct ReportModel {
  std::string name;
  std::string parent;  // empty for a base
  std::string method;  // "lora", "prefix+head", "trained", "imported", ...
  std::string status;  // trained | imported | not trained | out of date | interrupted ...
  std::optional<std::int64_t> parameters;                   // tensors stored; nullopt: none stored
  std::int64_t own_parameters = 0;                          // introduced by this model
  std::int64_t shared_with_parent = 0;                      // identical to the parent's
  std::map<std::string, double> validation;                 // last validation metrics of its run
  std::string recipe_hash;                                  // of the stored parameters; empty: none
  std::vector<std::pair<std::string, std::string>> recipe;  // (field, value as YAML flow)
};

// Modules several models hold as one set of parameters (the spec's `share` section).
struct ReportShare {
  std::string name;
  std::vector<std::string> models;
  std::vector<std::string> modules;  // parameter-name globs
};

// The per-step metrics of the run that made a model's stored parameters.
struct TrainingCurve {
  std::string model;
  std::int64_t run = 0;
  std::vector<lineage::StepMetrics> steps;
};

// One failing case of a behavioural test, as the store recorded it.
struct FailingCase {
  std::int64_t case_index = 0;
  std::string input;
  std::string expected;
  std::string output;
};

// One cell of the test matrix: a test on a model in the model's newest test run.
struct MatrixCell {
  std::string test;
  std::string model;
  std::int64_t run = 0;
  std::int64_t cases = 0;
  std::int64_t failures = 0;
  std::optional<double> previous_rate;     // the model's previous test run, same test
  std::optional<double> max_failure_rate;  // the test's threshold in the spec, when known
  std::vector<FailingCase> failing;        // at most kFailingCasesPerCell, by case index
  double failure_rate() const { return cases == 0 ? 0.0 : double(failures) / double(cases); }
};

// The violations of one assertion on one model in the model's newest test run.
struct ViolationGroup {
  std::string assertion;
  std::string model;
  std::int64_t run = 0;
  std::int64_t count = 0;
  double max_severity = 0;
  std::vector<lineage::AssertionViolation> worst;  // most severe first, at most a few
};

// For the failures of one test on one model: which model of its ancestry they first
// appear in, judged from the stored results of each ancestor's newest test run.
struct BlameSummary {
  std::string model;
  std::string test;
  std::int64_t failures = 0;
  std::map<std::string, std::int64_t> by_origin;  // origin model -> failing cases
  std::int64_t untested_ancestry = 0;  // cases whose origin is unknown: an ancestor has no
                                       // stored result for them
};

// One stored `scion eval` result; `current` when it scored the parameters stored now.
struct ReportEvaluation {
  lineage::EvalResult result;
  bool current = false;
};

struct FamilyReport {
  std::string title;         // the workspace folder's name
  std::string generated_at;  // ISO 8601 UTC
  std::string scion_version;
  std::string spec_note;            // why the spec was not used, when it was not; empty otherwise
  std::vector<ReportModel> models;  // parents before children
  std::vector<ReportShare> shares;
  std::vector<TrainingCurve> curves;
  std::vector<std::string> tests;  // matrix rows, in spec (or store) order
  std::vector<MatrixCell> matrix;
  std::vector<ViolationGroup> violations;  // most severe first
  std::vector<BlameSummary> blame;
  std::vector<ReportEvaluation> evaluations;  // by model (tree order), newest first
};

constexpr std::size_t kFailingCasesPerCell = 50;

}  // namespace scion::report
