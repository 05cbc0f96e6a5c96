// `scion test --compare A B`: the behavioural-test cases whose outcome differs between two
// stored test runs, of two models or of two versions of one model.
//
// A side is a model version (workbench/model_version.h): `MODEL` (its current version),
// `MODEL@N` (test run N of the model alone; or the version run N made or restored) or
// `MODEL@<hash prefix>`, so `news-lora@12 news-lora` compares an older version of
// news-lora with the current one. A version's cases are each test's newest stored result
// of it, wherever it was judged (tests reuse stored results: workbench/test_run.h).
// Nothing runs: the stored results of `scion test` are compared. Cases are matched by
// test, case index and input, so a case whose input changed between the runs (an edited
// template) counts as only in one side.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "lineage/store.h"

namespace scion::workbench {

struct ComparedSide {
  std::string named;  // as the command line names it: "news-lora@2", "news-lora"
  std::string model;
  std::int64_t run = 0;       // the test run named, or the version's newest test run
  std::string model_version;  // the recipe hash compared
  // The run that made or restored that version: its number in `lineage versions` (@N).
  std::optional<std::int64_t> version_run;
  bool current = false;       // the model's current version
  bool single_run = false;    // MODEL@N named test run N: only its cases
};

struct OutcomeDifference {
  std::string test;
  std::int64_t case_index = 0;
  std::string input;
  std::string expected;
  bool passed_a = false, passed_b = false;
  std::string output_a, output_b;
};

struct TestComparison {
  ComparedSide a, b;
  std::size_t compared = 0;               // cases in both runs
  std::vector<OutcomeDifference> differ;  // by test, then case
  std::size_t only_in_a = 0, only_in_b = 0;
  std::size_t failed_a = 0, failed_b = 0;  // of the compared cases, on each side
};

// Reads "MODEL", "MODEL@N" or "MODEL@<prefix>" against the store: invalid_argument for a
// malformed name, not_found for an unknown model or version, or a version with no stored
// test results (the message says to run `scion test MODEL`).
Result<ComparedSide> resolve_compared_side(lineage::LineageStore& store, const std::string& named);

Result<TestComparison> compare_test_runs(lineage::LineageStore& store, const ComparedSide& a,
                                         const ComparedSide& b);

}  // namespace scion::workbench
