// BehaviourSuite: what `scion test`, `scion predict --assert` and `scion lineage blame`
// share: the spec's tests and assertions compiled, their cases generated, and the
// outputs of a set of stored models computed in one co-batched pass.
//
// Tests and assertions ask one kind of model (ModelKind): a `prefer` test or an
// expression assertion with `continuations:` asks language models, every other one asks
// classifiers. A test or assertion applies to a model when its `models:` covers it and
// the kinds match; compile_suite() rejects a `models:` list that names a model of the
// other kind.
//
// EvaluationPlan collects what the pass must compute: the distinct texts classifiers
// must see (case inputs, perturbed twins, assertion perturbations) and the distinct
// (input, continuation) pairs language models must score, so each is evaluated once per
// model. evaluate_models() runs every requested model on them: classifiers with
// runtime::FamilyEvaluator, language models with runtime::ContinuationScorer; models of
// one base share each batch's trunk pass.
#pragma once

#include <map>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "assertions/behavioural_test.h"
#include "assertions/judge.h"
#include "assertions/model_assertion.h"
#include "spec/workspace.h"
#include "workbench/stored_family.h"

namespace scion::workbench {

struct CompiledTest {
  assertions::BehaviouralTest test;
  assertions::CaseSet cases;
};

struct BehaviourSuite {
  std::vector<CompiledTest> tests;  // spec order
  std::vector<assertions::ModelAssertion> assertions;
};

// Compiles every test and assertion of `ws` and generates the tests' cases (reading
// datasets for `data:` tests). Errors carry the spec position (exit code 2), including a
// `models:` entry of the wrong kind.
Result<BehaviourSuite> compile_suite(const spec::Workspace& ws);

// Every error compile_suite would stop at, not only the first: for each test and assertion
// the first error compiling it finds, a `data:` dataset that is not defined, `models:`
// entries of the wrong kind, and labels it expects (expect, direction, allowed_outputs)
// that the spec declares nowhere (datasets' `labels`, heads' `labels`), with a spelling
// suggestion. Messages start with the file:line:col of the key at fault. Cases are not
// generated (no dataset is read). `ws` may be LoadResult::partial: models are then
// unknown, and only the datasets' labels count as declared.
std::vector<Status> suite_problems(const spec::Workspace& ws);

// Whether a test or assertion naming `models` (empty: all) covers `model`.
bool covers(const std::vector<std::string>& models, const std::string& model);

// The kind of model a test or assertion asks.
ModelKind kind_of(const assertions::BehaviouralTest& test);
ModelKind kind_of(const assertions::ModelAssertion& assertion);

// Whether the test or assertion applies to `model`: it covers it and asks its kind.
bool applies(const spec::Workspace& ws, const assertions::BehaviouralTest& test,
             const std::string& model);
bool applies(const spec::Workspace& ws, const assertions::ModelAssertion& assertion,
             const std::string& model);

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

// The key of an input in EvaluationPlan and FamilyOutputs: a single text is its own key;
// a sentence pair (and a text that begins with the separator U+001D) is U+001D followed
// by its parts as a JSON array, so that no pair's key is a text's.
std::string input_key(const runtime::ModelInput& input);

// What one pass computes: every head model on every input (texts, or sentence pairs),
// every language model on every (input, continuation) pair.
class EvaluationPlan {
 public:
  void add_text(const std::string& text) { add_input({text, std::nullopt}); }
  void add_input(const runtime::ModelInput& input);
  // `origin` says where the continuation comes from ("file:line:col: test 'x':
  // expect.prefer"), for the error when it is too long for a model.
  void add_continuation(const std::string& input, const std::string& continuation,
                        const std::string& origin);
  // What judging `test_case` needs: a classifier test its input and perturbed twin, a
  // language-model test its two continuations after the input.
  void add_case(const assertions::BehaviouralTest& test, const assertions::TestCase& test_case);
  // The inputs' keys (input_key), and the inputs, in the order first added.
  const std::vector<std::string>& texts() const { return texts_.texts(); }
  const std::vector<runtime::ModelInput>& inputs() const { return inputs_; }
  const std::vector<runtime::ContinuationQuery>& queries() const { return queries_; }
  // Each distinct continuation and where it was first asked for.
  const std::map<std::string, std::string>& continuation_origins() const { return origins_; }
  // Rank `rank`'s share of `ranks`: a contiguous run of the texts and one of the queries
  // (rank r of n gets [N·r/n, N·(r+1)/n) of each), so that the shards together hold each
  // text and query once, and the first error a shard meets is the one the whole plan
  // would meet first. REQUIRES: 0 <= rank < ranks.
  EvaluationPlan shard(int rank, int ranks) const;

 private:
  TextIndex texts_;
  std::vector<runtime::ModelInput> inputs_;
  std::set<std::pair<std::string, std::string>> seen_;
  std::vector<runtime::ContinuationQuery> queries_;
  std::map<std::string, std::string> origins_;
};

// The outputs of one pass, by model and input key (input_key). A head model's output has
// its task's values (assertions::ModelOutput); a language model's has
// continuation_logprobs for every continuation scored after that input.
class FamilyOutputs {
 public:
  // REQUIRES: the model was evaluated, and `input` collected for its kind.
  const assertions::ModelOutput& at(const std::string& model, const std::string& input) const {
    return by_model_.at(model).at(input);
  }
  // The model's outputs by input, for evaluate_models() to fill.
  std::map<std::string, assertions::ModelOutput>& of(const std::string& model) {
    return by_model_[model];
  }
  // Every model's outputs by input.
  const std::map<std::string, std::map<std::string, assertions::ModelOutput>>& by_model() const {
    return by_model_;
  }
  // Adds the outputs of another shard of the same pass: an input both hold (a language
  // model's input with some continuations in each) keeps both continuations' scores.
  void merge(FamilyOutputs other);

 private:
  std::map<std::string, std::map<std::string, assertions::ModelOutput>> by_model_;
};

// Runs each model that has a head (StoredFamily::classifier) on plan.inputs()
// and each that has a language-model form on plan.queries(). A continuation longer than
// a language model's rows hold is a spec error at its origin.
// REQUIRES: every model is loaded in `family`.
Result<FamilyOutputs> evaluate_models(const StoredFamily& family, runtime::Backend& backend,
                                      const std::vector<std::string>& models,
                                      const EvaluationPlan& plan, int chunk_size);

// The case number of a case id "<test>/<n>".
std::int64_t case_number(const std::string& case_id);

// "positive (0.93)": the prediction and how sure it is (a regression head: its values).
std::string describe_output(const assertions::ModelOutput& output);

// A head model's output as assertions/ judges it.
assertions::ModelOutput model_output(runtime::HeadOutput output);

// What a case of `test` must satisfy, in words, for stored results and reports; with
// `test_case`, a preference names that case's continuations (template slots filled).
std::string describe_expectation(const assertions::BehaviouralTest& test,
                                 const assertions::TestCase* test_case = nullptr);

}  // namespace scion::workbench
