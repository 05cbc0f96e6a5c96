// runtime::classification_metrics (as `scion eval` reports it) and perplexity_metrics
// against values worked out by hand on tiny datasets, and eval_data's reading of a data
// file.
#include <catch2/catch.hpp>

#include <cmath>
#include <fstream>

#include "workbench/dataset_eval.h"

using namespace scion;

namespace {

// The probabilities of a classifier sure of `predicted`, K classes.
std::vector<float> sure_of(const std::vector<std::int32_t>& predicted, std::size_t K) {
  std::vector<float> p(predicted.size() * K, 0.0f);
  for (std::size_t i = 0; i < predicted.size(); ++i)
    p[i * K + static_cast<std::size_t>(predicted[i])] = 1.0f;
  return p;
}

// A workspace with one classifier, `cls`, over labels neg and pos.
spec::Workspace classifier_workspace() {
  spec::Workspace ws;
  spec::Model base;
  base.name = "base";
  base.architecture = spec::Architecture{.layers = 1, .width = 8, .heads = 2, .max_length = 8};
  spec::Model cls;
  cls.name = "cls";
  cls.from = "base";
  cls.adaptation.head = spec::HeadSpec{.labels = {"neg", "pos"}};
  cls.training = spec::TrainingSpec{.objective = spec::Objective::kClassification};
  ws.models = {base, cls};
  return ws;
}

}  // namespace

// Three classes, eight examples (truth -> predicted):
//   a->a a->a a->b b->b b->b b->a c->a c->b
// confusion [true][pred]: a: 2 1 0, b: 1 2 0, c: 1 1 0
// a: tp 2, predicted 4, support 3 -> P 1/2, R 2/3, F1 4/7
// b: tp 2, predicted 4, support 3 -> P 1/2, R 2/3, F1 4/7
// c: tp 0, predicted 0, support 2 -> P 0,   R 0,   F1 0
// accuracy 4/8; macro-F1 (a, b, c all occur) = (4/7 + 4/7 + 0) / 3 = 8/21
TEST_CASE("classification metrics match a hand-worked example") {
  const std::vector<std::string> labels = {"a", "b", "c"};
  const std::vector<std::int32_t> truth = {0, 0, 0, 1, 1, 1, 2, 2};
  const std::vector<std::int32_t> predicted = {0, 0, 1, 1, 1, 0, 0, 1};
  const auto m = runtime::classification_metrics(labels, truth, sure_of(predicted, 3));
  CHECK(m.rows == 8);
  CHECK(m.accuracy == Approx(0.5));
  CHECK(m.confusion == std::vector<std::vector<std::int64_t>>{{2, 1, 0}, {1, 2, 0}, {1, 1, 0}});
  REQUIRE(m.per_class.size() == 3);
  CHECK(m.per_class[0].precision == Approx(0.5));
  CHECK(m.per_class[0].recall == Approx(2.0 / 3));
  CHECK(m.per_class[0].f1 == Approx(4.0 / 7));
  CHECK(m.per_class[1].f1 == Approx(4.0 / 7));
  CHECK(m.per_class[2].precision == 0.0);
  CHECK(m.per_class[2].recall == 0.0);
  CHECK(m.per_class[2].f1 == 0.0);
  CHECK(m.per_class[2].support == 2);
  CHECK(m.per_class[2].predicted == 0);
  CHECK(m.macro_f1 == Approx(8.0 / 21));
}

// A head label that neither the data nor the predictions use does not count toward
// macro-F1: truth a b a b, predicted a b b b over labels a b c.
// a: P 1/1, R 1/2, F1 2/3; b: P 2/3, R 2/2, F1 4/5; macro = (2/3 + 4/5) / 2 = 11/15.
TEST_CASE("macro-F1 averages the classes that occur") {
  const auto m = runtime::classification_metrics(
      {"a", "b", "c"}, std::vector<std::int32_t>{0, 1, 0, 1}, sure_of({0, 1, 1, 1}, 3));
  CHECK(m.accuracy == Approx(0.75));
  CHECK(m.macro_f1 == Approx(11.0 / 15));
  const auto json = workbench::to_json(m);
  CHECK(json["labels"] == nlohmann::json({"a", "b", "c"}));
  CHECK(json["per_class"][1]["precision"].get<double>() == Approx(2.0 / 3));
  CHECK(json["confusion"][0] == nlohmann::json({1, 1, 0}));
}

// Rows of 1 and 3 tokens with log-probabilities -2 and -4: mean NLL 6/4, perplexity e^1.5.
TEST_CASE("perplexity is exp of the mean negative log-likelihood per token") {
  const std::vector<double> logprobs = {-2.0, -4.0};
  const std::vector<std::size_t> tokens = {1, 3};
  const auto m = workbench::perplexity_metrics(logprobs, tokens, false);
  CHECK(m.tokens == 4);
  CHECK(m.mean_nll == Approx(1.5));
  CHECK(m.perplexity == Approx(std::exp(1.5)));
  CHECK(workbench::to_json(m)["pseudo"] == false);
}

TEST_CASE("eval data: a file is read with the classifiers' labels, and refused when unknown") {
  const auto dir = std::filesystem::temp_directory_path() / "scion-dataset-eval-test";
  std::filesystem::create_directories(dir);
  const auto file = dir / "held-out.jsonl";
  std::ofstream(file) << "{\"text\": \"good\", \"label\": \"pos\"}\n"
                         "{\"text\": \"bad\", \"label\": \"neg\"}\n";
  const spec::Workspace ws = classifier_workspace();
  auto data = workbench::eval_data(ws, file.string(), workbench::head_labels(ws, {"cls"}));
  REQUIRE(data.is_ok());
  CHECK(data->examples.rows() == 2);
  CHECK(data->examples.examples[0].label == 1);
  CHECK(data->digest.size() == 64);

  auto missing = workbench::eval_data(ws, (dir / "nothing.jsonl").string(), {});
  REQUIRE_FALSE(missing.is_ok());
  CHECK(missing.status().code() == StatusCode::kNotFound);

  std::ofstream(dir / "rows.parquet") << "x";
  auto odd = workbench::eval_data(ws, (dir / "rows.parquet").string(), {});
  REQUIRE_FALSE(odd.is_ok());
  CHECK(odd.status().message().find(".jsonl") != std::string::npos);
  std::filesystem::remove_all(dir);
}
