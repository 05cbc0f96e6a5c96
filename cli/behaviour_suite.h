// BehaviourSuite: what `scion test`, `scion predict --assert` and `scion lineage blame`
// share: the spec's tests and assertions compiled, their cases generated, and the
// outputs of a set of stored models on a set of texts, computed in one co-batched pass.
//
// TextIndex collects the distinct texts that some model must see (case inputs, their
// perturbed twins, assertion perturbations), so each text is evaluated once per model.
// evaluate_models() runs every requested model on every collected text with
// runtime::FamilyEvaluator: models of one base share each batch's trunk pass.
#pragma once

#include <map>
#include <span>
#include <string>
#include <vector>

#include "assertions/behavioural_test.h"
#include "assertions/judge.h"
#include "assertions/model_assertion.h"
#include "cli/stored_family.h"
#include "spec/workspace.h"

namespace scion::cli {

struct CompiledTest {
  assertions::BehaviouralTest test;
  assertions::CaseSet cases;
};

struct BehaviourSuite {
  std::vector<CompiledTest> tests;  // spec order
  std::vector<assertions::ModelAssertion> assertions;
};

// Compiles every test and assertion of `ws` and generates the tests' cases (reading
// datasets for `data:` tests). Errors carry the spec position (exit code 2).
Result<BehaviourSuite> compile_suite(const spec::Workspace& ws);

// Whether a test or assertion naming `models` (empty: all) covers `model`.
bool covers(const std::vector<std::string>& models, const std::string& model);

// Distinct texts, in the order first added.
class TextIndex {
 public:
  std::size_t add(const std::string& text);
  // REQUIRES: `text` was added.
  std::size_t at(const std::string& text) const { return index_.at(text); }
  const std::vector<std::string>& texts() const { return texts_; }

 private:
  std::map<std::string, std::size_t> index_;
  std::vector<std::string> texts_;
};

// outputs[model][i]: the model's output on texts[i].
using FamilyOutputs = std::map<std::string, std::vector<assertions::ModelOutput>>;

// REQUIRES: every model is loaded in `family` and has a classifier.
Result<FamilyOutputs> evaluate_models(const StoredFamily& family, runtime::Backend& backend,
                                      const std::vector<std::string>& models,
                                      std::span<const std::string> texts, int chunk_size);

// The case number of a case id "<test>/<n>".
std::int64_t case_number(const std::string& case_id);

// "positive (0.93)": the predicted label and its probability.
std::string describe_output(const assertions::ModelOutput& output);

// What a case of `test` must satisfy, in words, for stored results and reports.
std::string describe_expectation(const assertions::BehaviouralTest& test);

}  // namespace scion::cli
