// Judging behavioural-test cases from model outputs, and summarising a test's verdicts
// into a TestResult (what reports and the store record).
//
// judge_case() applies the test's semantics to one case: MFT checks `expect` on the
// input's output; INV fails when the predicted label changes (or, with `threshold`, when
// p(original label) moves by more than it); DIR checks `direction` between the two
// outputs and `expect` on the perturbed output. With `regression: parent` a failure
// counts only if the parent model passes the same case; otherwise it is "inherited".
// Pure functions; thread-safe.
#pragma once

#include <string>
#include <vector>

#include "assertions/behavioural_test.h"
#include "assertions/model_output.h"

namespace scion::assertions {

// The outputs one model (and its parent) gave for a case. Pointers are borrowed.
struct CaseOutputs {
  const ModelOutput* original = nullptr;          // REQUIRED
  const ModelOutput* perturbed = nullptr;         // REQUIRED for INV and DIR
  const ModelOutput* parent = nullptr;            // REQUIRED with regression: parent
  const ModelOutput* parent_perturbed = nullptr;  // REQUIRED with regression: parent on INV/DIR
};

enum class Outcome { kPass, kFail, kInherited };

struct Verdict {
  Outcome outcome = Outcome::kPass;
  std::string reason;  // why it failed, or a short account of a pass
};

// Fails (invalid argument) when an output the test needs is missing, or a label or
// variable the test names is not in the model's output.
Result<Verdict> judge_case(const BehaviouralTest& test, const TestCase& test_case,
                           const CaseOutputs& outputs);

struct FailingExample {
  std::string case_id;
  std::string input;
  std::string perturbed;  // empty for MFT
  std::string reason;
};

// One behavioural test on one model.
struct TestResult {
  std::string test;
  std::string model;
  std::string type;  // mft | inv | dir
  std::string capability;
  std::size_t cases = 0;  // judged cases
  std::size_t failures = 0;
  std::size_t inherited = 0;       // failures the parent shares (regression: parent)
  std::size_t not_applicable = 0;  // inputs the perturbation could not change
  double failure_rate = 0.0;       // failures / cases
  double max_failure_rate = 0.0;
  bool passed = false;                   // cases > 0 and failure_rate <= max_failure_rate
  std::vector<FailingExample> examples;  // the first few failures, in case order
};

// REQUIRES: verdicts.size() == cases.cases.size(), in the same order.
TestResult summarize(const BehaviouralTest& test, const std::string& model, const CaseSet& cases,
                     const std::vector<Verdict>& verdicts, std::size_t max_examples = 3);

}  // namespace scion::assertions
