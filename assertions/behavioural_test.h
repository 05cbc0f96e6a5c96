// BehaviouralTest: the compiled form of a spec test (spec::TestSpec) and the cases it
// generates. Semantics follow CheckList (Ribeiro et al., ACL 2020):
//   MFT  minimum functionality: each input must meet `expect`.
//   INV  invariance: the prediction must not change under `perturb`.
//   DIR  directional: under `perturb`, a probability moves the stated `direction`
//        (and/or the perturbed input meets `expect`).
// Inputs come from `template(s)` filled from lexicons, literal `inputs`, or a dataset
// (`data`), which the evaluator reads and hands to generate_cases(). The body keys are
// documented in docs/testing.md. A BehaviouralTest is an immutable value once compiled;
// it owns copies of everything it needs (templates with their lexicon entries, the
// perturbation), so the LexiconSet may go away.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "assertions/expression.h"
#include "assertions/lexicon.h"
#include "assertions/perturbation.h"
#include "assertions/text_template.h"
#include "base/status.h"
#include "spec/workspace.h"

namespace scion::assertions {

enum class TestType { kMft, kInv, kDir };
std::string_view test_type_name(TestType type);

// What a (single) output must satisfy.
struct Expectation {
  enum class Kind {
    kNone,
    kLabel,      // the predicted label is one of `labels`
    kNotLabel,   // the predicted label is none of `labels`
    kPredicate,  // `predicate` evaluates to non-zero
    kPrefer,     // language model: score(prefer) > score(over) + margin
  };
  // How a continuation is scored from its tokens' log-probabilities. kMean (per token)
  // by default: a sum always favours the continuation with fewer tokens.
  enum class Score { kMean, kSum };
  Kind kind = Kind::kNone;
  std::vector<std::string> labels;
  std::optional<Expression> predicate;
  std::string prefer;  // may hold template slots ("{name}"), filled per case
  std::string over;
  double margin = 0.0;  // in the score's unit: nats per token (mean) or nats (sum)
  Score score = Score::kMean;
};

// How a DIR test's probability must move from the original to the perturbed input.
struct Direction {
  enum class Quantity { kLabel, kConfidence };  // p(label) | p(originally predicted label)
  Quantity quantity = Quantity::kLabel;
  std::string label;
  bool increase = true;
  double tolerance = 0.0;  // moves against the direction up to this much still pass
};

// Where the evaluator should read inputs from, for tests with `data:`.
struct DataSource {
  std::string dataset;  // name in Workspace::datasets
  std::size_t max_cases = 0;
};

struct BehaviouralTest {
  std::string name;
  std::string origin;  // "file:line:col: test 'name'", for messages
  TestType type = TestType::kMft;
  std::string capability;
  std::vector<std::string> models;
  double max_failure_rate = 0.0;

  std::vector<TextTemplate> templates;
  std::vector<std::string> inputs;
  std::optional<DataSource> data;
  std::size_t max_cases = 100;
  std::uint64_t seed = 0;

  Expectation expect;  // MFT: on the input; DIR: on the perturbed input
  std::optional<Perturbation> perturb;
  std::optional<Direction> direction;
  std::optional<double> threshold;  // INV: max change of p(original label)
  bool regression_parent = false;   // count only failures the parent model does not have

  // Whether the test asks language models (a `prefer` expectation: continuation scores)
  // rather than classifiers (labels and probabilities). A test asks one kind, never both.
  bool scores_continuations() const { return expect.kind == Expectation::Kind::kPrefer; }
};

// Why `test` cannot judge a model whose head has `task`, or nullopt when it can:
// regression heads predict no label (label expectations, INV without a threshold on the
// value's change, DIR on the confidence do not apply), token classifiers have no one
// probability to move (DIR does not apply). Tests without `models:` skip such models;
// naming one is an error.
std::optional<std::string> unsupported_for(const BehaviouralTest& test, spec::HeadTask task);

// Compiles a spec test. `lexicons` are the workspace's (LexiconSet::for_workspace); the
// test's own `lexicons:` key adds to them, with string values read as files relative to
// `root_dir`. Every error names the file:line:col of the test and the key path.
Result<BehaviouralTest> compile_test(const spec::TestSpec& spec, const LexiconSet& lexicons,
                                     const std::filesystem::path& root_dir);

// One input to run, and for INV/DIR its perturbed twin.
struct TestCase {
  std::string id;  // "<test>/<n>", stable for a given spec and seed
  std::string input;
  std::optional<std::string> perturbed;
  std::string source;  // "template 0", "inputs[3]", "data reviews[17]"
  std::vector<std::pair<std::string, std::string>> fills;  // template slot -> value
  std::string prefer;  // language-model expectation with this case's slots filled
  std::string over;
};

struct CaseSet {
  std::vector<TestCase> cases;
  std::size_t not_applicable = 0;  // inputs the perturbation could not change (skipped)
};

// Generates the cases: templates, then inputs, then a seeded sample of `dataset_texts`
// (REQUIRED when test.data is set: the dataset's texts, in file order), at most
// max_cases in all (data.max_cases for the dataset part). INV/DIR inputs that the
// perturbation cannot change are counted in not_applicable, not returned.
Result<CaseSet> generate_cases(const BehaviouralTest& test,
                               std::span<const std::string> dataset_texts = {});

}  // namespace scion::assertions
