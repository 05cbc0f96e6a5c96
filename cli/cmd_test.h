// `scion test`: behavioural tests and model assertions over the trained family.
// Declared here so that `scion run` can end with the same step.
#pragma once

#include <string>
#include <vector>

#include "cli/global_options.h"

namespace scion::cli {

struct TestOptions {
  std::vector<std::string> models;  // empty: every model some test or assertion applies to
  std::string junit_path;           // JUnit XML report, when set
  std::string violations_path;      // assertion violations as JSONL, most severe first
  bool force = false;               // replace existing report files
  int chunk_size = 64;              // texts per co-batched forward pass
  int examples = 3;                 // failing examples shown per test and model
  bool only_tested = false;         // skip named models no test or assertion applies to (for `run`)
  bool record = true;               // store the results; false: read the store only (--no-record)
  bool rerun = false;               // judge every test again, stored results or not (--rerun)
  std::vector<std::string> compare;  // --compare A B: compare two stored test runs instead
};

// Evaluates, judges, records and reports. Returns 0, 1 when a test exceeds its
// max_failure_rate, or the error's exit code.
int run_behavioural_tests(const GlobalOptions& global, const TestOptions& options);

// `scion test --compare A B` (cli/cmd_test_compare.cpp): the cases whose outcome differs
// between two stored test runs. Returns 0 or the error's exit code.
int run_test_comparison(const GlobalOptions& global, const TestOptions& options);

}  // namespace scion::cli
