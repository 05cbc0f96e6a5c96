#include "cli/behaviour_suite.h"

#include <algorithm>
#include <fmt/format.h>

#include "runtime/data/dataset_reader.h"
#include "runtime/evaluation/family_evaluator.h"

namespace scion::cli {

Result<BehaviourSuite> compile_suite(const spec::Workspace& ws) {
  BehaviourSuite suite;
  auto lexicons = assertions::LexiconSet::for_workspace(ws);
  if (!lexicons) return lexicons.status();
  for (const spec::TestSpec& spec : ws.tests) {
    auto test = assertions::compile_test(spec, *lexicons, ws.root_dir);
    if (!test) return test.status();
    std::vector<std::string> dataset_texts;
    if (test->data) {
      const spec::Dataset* dataset = ws.find_dataset(test->data->dataset);
      if (!dataset)
        return spec_error(test->origin + ": data.dataset: no dataset '" + test->data->dataset +
                          "' under datasets:");
      auto examples = data::read_dataset(*dataset);
      if (!examples) return examples.status();
      for (const data::Example& e : examples->examples) dataset_texts.push_back(e.text);
    }
    auto cases = assertions::generate_cases(*test, dataset_texts);
    if (!cases) return cases.status();
    suite.tests.push_back({std::move(*test), std::move(*cases)});
  }
  for (const spec::AssertionSpec& spec : ws.assertions) {
    auto assertion = assertions::ModelAssertion::compile(spec, *lexicons);
    if (!assertion) return assertion.status();
    suite.assertions.push_back(std::move(*assertion));
  }
  return suite;
}

bool covers(const std::vector<std::string>& models, const std::string& model) {
  return models.empty() || std::find(models.begin(), models.end(), model) != models.end();
}

std::size_t TextIndex::add(const std::string& text) {
  auto [it, inserted] = index_.emplace(text, texts_.size());
  if (inserted) texts_.push_back(text);
  return it->second;
}

Result<FamilyOutputs> evaluate_models(const StoredFamily& family, runtime::Backend& backend,
                                      const std::vector<std::string>& models,
                                      std::span<const std::string> texts, int chunk_size) {
  std::vector<runtime::EvaluatedModel> evaluated;
  for (const std::string& name : models) evaluated.push_back(*family.classifier(name));
  runtime::FamilyEvaluator evaluator(backend);
  auto outputs = evaluator.classify(evaluated, texts, {.chunk_size = chunk_size});
  if (!outputs) return outputs.status();
  FamilyOutputs by_model;
  for (std::size_t m = 0; m < models.size(); ++m) by_model[models[m]] = std::move((*outputs)[m]);
  return by_model;
}

std::int64_t case_number(const std::string& case_id) {
  const auto slash = case_id.rfind('/');
  return std::stoll(case_id.substr(slash == std::string::npos ? 0 : slash + 1));
}

std::string describe_output(const assertions::ModelOutput& output) {
  return fmt::format("{} ({:.2f})", assertions::predicted_label(output), assertions::confidence(output));
}

std::string describe_expectation(const assertions::BehaviouralTest& test) {
  using Kind = assertions::Expectation::Kind;
  std::string expect;
  switch (test.expect.kind) {
    case Kind::kLabel: expect = fmt::format("label {}", fmt::join(test.expect.labels, " or ")); break;
    case Kind::kNotLabel: expect = fmt::format("label not {}", fmt::join(test.expect.labels, " or ")); break;
    case Kind::kPredicate: expect = "predicate holds"; break;
    case Kind::kPrefer: expect = "prefers the expected continuation"; break;
    case Kind::kNone: break;
  }
  std::string what;
  if (test.type == assertions::TestType::kInv) what = "prediction unchanged under perturbation";
  if (test.direction)
    what = fmt::format("p({}) {} under perturbation",
                       test.direction->quantity == assertions::Direction::Quantity::kLabel
                           ? test.direction->label : "predicted label",
                       test.direction->increase ? "does not decrease" : "does not increase");
  if (!expect.empty() && test.type == assertions::TestType::kDir) expect = "perturbed " + expect;
  if (what.empty()) return expect;
  return expect.empty() ? what : what + "; " + expect;
}

}  // namespace scion::cli
