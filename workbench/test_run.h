// A test run (`scion test`, and the end of `scion run`): every behavioural test and model
// assertion of the spec on the selected stored models. A result the store already holds
// under the same key (model version, test definition, lexicons, test semantics:
// workbench/test_keys.h) is read back; the rest are evaluated in one co-batched pass
// (classifiers on texts, language models on (input, continuation) pairs), judged, and
// recorded against each model version (recipe hash) under a run of kind `test` that
// records when it began and how many cases it judged. Nothing new to judge: no pass, no
// run recorded.
//
// A test with `regression: parent` and an assertion that compares with the parent use
// the model's parent when it is of the model's kind; otherwise the test runs without the
// comparison (JudgedTest::note says why) and the assertion is skipped (TestRun::notes).
// Returns values only; cli/cmd_test.cpp prints the family matrix and writes report files.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "assertions/judge.h"
#include "assertions/junit_writer.h"
#include "lineage/records.h"
#include "lineage/store.h"
#include "runtime/backend.h"
#include "runtime/comm/communicator.h"
#include "spec/workspace.h"
#include "workbench/behaviour_suite.h"

namespace scion::workbench {

struct TestRunRequest {
  std::vector<std::string> models;  // empty: every model some test or assertion applies to
  int chunk_size = 64;              // texts per co-batched forward pass
  int examples = 3;                 // failing examples kept per test and model
  bool only_tested = false;         // skip named models no test or assertion applies to
  bool record = true;               // store the results; false: read the store only
  bool rerun = false;               // judge every pair again, stored results or not
  // Under mpirun, the job's ranks: each evaluates its share of the cases and rank 0
  // alone judges and records (workbench/sharded_evaluation.h). Null: one process.
  runtime::Communicator* comm = nullptr;
};

// One test judged on one model.
struct JudgedTest {
  assertions::TestResult result;
  std::optional<double> previous_rate;  // the model's previous test run, same test
  std::string note;                     // why the test ran without its parent comparison
  nlohmann::json scores;  // language-model tests: each case's log-likelihoods; else null
  std::vector<lineage::TestCaseResult> rows;  // every case, as the store records it
  std::int64_t run = 0;  // the test run that judged it (0: judged now, not recorded)
  bool reused = false;   // read from the store, not judged again
};

struct Violation {
  lineage::AssertionViolation record;
  double severity = 0;
};

struct TestRun {
  std::vector<std::string> models;              // tested, spec order; empty: nothing applied
  std::vector<JudgedTest> judged;               // test-major, then model
  std::vector<Violation> violations;            // most severe first
  std::map<std::string, std::int64_t> run_ids;  // by model, the runs recorded now
  std::size_t reused = 0;                       // results read from the store
  std::vector<std::string> notes;               // assertions skipped, and why
  // Every assertion checked on a model (kind set; the violation counts are the caller's
  // to fill from `violations`, as the JUnit report does).
  std::vector<assertions::AssertionOutcome> assertions_checked;
};

// Whether the test's failure rate is above its max_failure_rate.
bool exceeded(const assertions::TestResult& result);

// Judges `test` on `model` (whose recipe hash is `model_version`) from `outputs`. With
// `regression: parent`, `parent` names the model's comparable parent; empty when it has
// none, and the test then runs plainly with a note ending in `no_parent_reason`.
// Errors: an output does not fit the test (a label it names is missing), with the test's
// origin and the model. REQUIRES: outputs hold every case input (and perturbed twin) for
// `model`, and for `parent` when set.
Result<JudgedTest> judge_test(const CompiledTest& test, const std::string& model,
                              const std::string& model_version, const std::string& parent,
                              const std::string& no_parent_reason, const FamilyOutputs& outputs,
                              std::size_t max_examples);

// Selects, evaluates, judges, checks assertions and (with request.record) records. With
// several ranks (request.comm) every rank calls it; the others than rank 0 evaluate
// their share, send it to rank 0 and return a TestRun holding only `models`.
// REQUIRES: `suite` is compile_suite(ws) and holds a test or an assertion.
// Errors: an unknown model, no test applying to any model (kInvalidArgument), a model not
// trained for its current recipe, store errors.
Result<TestRun> run_tests(const spec::Workspace& ws, lineage::LineageStore& store,
                          runtime::Backend& backend, const BehaviourSuite& suite,
                          const TestRunRequest& request);

}  // namespace scion::workbench
