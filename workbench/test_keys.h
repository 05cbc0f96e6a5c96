// The keys under which test results are stored for reuse (docs/testing.md, "Incremental
// tests"): a test's result on a model version is the same as long as the version, the
// test's definition, the lexicons it draws from and scion's test semantics are, so
// `scion test` and `scion run` read it back instead of evaluating again.
//
// A test's definition digest covers its type and body (the spec keys that decide each
// case's verdict; not `models:` or `max_failure_rate`, which only select and summarise),
// the cases it generates (inputs, perturbed twins, continuations: so a dataset, a lexicon
// file or a perturbation that changes them changes the digest), and, where `regression:
// parent` compares with the parent, the parent's version. An assertion's covers its kind
// and body, the inputs it watches (every input of the tests that apply to the model) and, where it
// compares with the parent, the parent's version.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "assertions/model_assertion.h"
#include "lineage/records.h"
#include "spec/workspace.h"
#include "workbench/behaviour_suite.h"

namespace scion::workbench {

// Bumped whenever judging changes what a case's verdict or a violation is for the same
// outputs: every stored result then runs again once.
inline constexpr std::int64_t kTestSemanticsVersion = 1;

// The key of `test` judged on version `model_version` of `model`. `parent_version`: the
// recipe hash of the parent it is compared with (regression: parent), else empty.
lineage::TestOutcomeKey test_outcome_key(const spec::Workspace& ws, const CompiledTest& test,
                                         const std::string& model, const std::string& model_version,
                                         const std::string& parent_version);

// The key of `assertion` checked on `model` over `watched` (the sorted inputs of the tests
// that apply to `model`).
lineage::TestOutcomeKey assertion_outcome_key(const spec::Workspace& ws,
                                              const assertions::ModelAssertion& assertion,
                                              const std::vector<std::string>& watched,
                                              const std::string& model,
                                              const std::string& model_version,
                                              const std::string& parent_version);

}  // namespace scion::workbench
