// Blame: for each case a model fails, the ancestor in which that failure first appears
// (`scion lineage blame`).
//
// The model's tests (or the one named) run on the model and on every ancestor up the
// chain in one co-batched pass (all of them share one trunk): classifiers on the cases'
// texts, language models on the cases' (input, continuation) pairs. Each test is judged
// plainly on every model of the chain (`regression: parent` is not applied: blame asks
// about raw failures). A failing case is *introduced* by the model just below the
// nearest ancestor that passes it; when every ancestor fails it too, it is *inherited*
// from the top of the chain.
//
// The chain stops at the first ancestor of another kind: a base pretrained with masked LM
// cannot be asked a classification question, nor a classifier a language-model one.
// Failures present at the top of the chain come from its adaptation on the trunk, or
// from the trunk itself; blame cannot tell those apart. When the model is itself the top
// of its chain (a base, or the first model of its kind), its failures are its own.
// Returns values only; cli/cmd_lineage_blame.cpp words and prints them.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "lineage/store.h"
#include "runtime/backend.h"
#include "spec/workspace.h"
#include "workbench/behaviour_suite.h"

namespace scion::workbench {

struct BlameRequest {
  std::string model;  // MODEL, or MODEL@N / MODEL@<prefix>: that version's chain
  std::string test;   // empty: every test that applies to the model
  std::optional<std::int64_t> case_number;  // only this case
  int chunk_size = 64;                      // texts per co-batched forward pass
};

// Where a model of the chain came from: its method and the finished run (with its data)
// that made its parameters for the current recipe.
struct ChainLink {
  std::string model;
  std::string method;
  std::optional<std::int64_t> run;
  std::string dataset_digest;
};

struct BlamedCase {
  std::string case_id;
  std::string input;
  std::optional<std::string> perturbed;
  std::string reason;  // why the blamed model fails it
  std::size_t origin;  // index in the chain of the model that introduced it; the chain's
                       // last index: present at the top of the chain
};

struct TestBlame {
  std::string test;
  std::size_t cases = 0;  // cases judged
  std::vector<BlamedCase> failing;
  std::map<std::size_t, std::size_t> by_origin;  // chain index -> failing cases
};

struct BlameReport {
  std::string model;
  ModelKind kind = ModelKind::kClassifier;
  std::vector<ChainLink> chain;  // the model first, then its ancestors of its kind
  // The parent of the top of the chain when it is of the other kind; empty at a base.
  std::string headless_ancestor;
  std::vector<TestBlame> tests;
};

// The one rule of where a failure comes from, for `scion lineage blame` (which judges the
// chain's outputs) and `scion report` (which reads the chain's stored results): `fails`
// holds a failing case's verdicts from the failing model (index 0, true) up its chain, as
// far as they go: to the first ancestor that passes it (false, last), or to the top of
// what can be judged. The failure is introduced by the model just below the nearest
// ancestor that passes it; with none passing, it is present at the top: the last index.
// REQUIRES: !fails.empty(), fails.front(), every entry but the last true.
std::size_t failure_origin(const std::vector<bool>& fails);

// The chain a failure of `model` is traced up: the model, then its ancestors up to the
// first of another kind (which cannot be asked the same question). One chain for
// `scion lineage blame` and `scion report`.
std::vector<const spec::Model*> blame_chain(const spec::Workspace& ws, const spec::Model& model);

// Judges `test` on each model of `chain` (names, the blamed model first) from `outputs`,
// case by case (only case `only_case` when set), and says where each failure of the
// first model comes from. An ancestor whose outputs do not fit the test (its labels lack
// one the test names) ends the chain for that case. Errors: the first model's outputs do
// not fit the test. REQUIRES: outputs hold every case input for every model of `chain`.
Result<TestBlame> blame_test(const CompiledTest& test, const std::vector<std::string>& chain,
                             const FamilyOutputs& outputs,
                             std::optional<std::int64_t> only_case = std::nullopt);

// Loads the chain from the store, evaluates it and blames every selected test.
// Errors: unknown model or test (kNotFound), a test of the other kind or a case number no
// selected test has (kInvalidArgument), a model of the chain not trained for its current
// recipe, store errors.
Result<BlameReport> blame(const spec::Workspace& ws, lineage::LineageStore& store,
                          runtime::Backend& backend, const BlameRequest& request);

}  // namespace scion::workbench
