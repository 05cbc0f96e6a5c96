// The spec keys of the tasks beyond single-label classification: head tasks and what
// they need of their data, sentence pairs, named dev sets, keep_best, class weights, and
// the metrics early stopping may follow. Errors name their place and what to do.
#include <algorithm>
#include <catch2/catch.hpp>

#include "spec/metric_names.h"
#include "spec/recipe_hash.h"
#include "spec_test_workspace.h"

using namespace scion::spec;
using scion::spec::testing::TempWorkspace;

namespace {

// Datasets of every label type, and a base; a model appended starts on line 24.
constexpr const char* kTasks =
    "datasets:\n"
    "  reviews: {path: reviews.jsonl, labels: [negative, positive]}\n"
    "  dev: {path: dev.jsonl, labels: [negative, positive]}\n"
    "  scores:\n"
    "    path: scores.jsonl\n"
    "    label_type: number\n"
    "    text_pair_field: other\n"
    "  topics:\n"
    "    path: topics.jsonl\n"
    "    label_type: multi\n"
    "    labels: [sport, money]\n"
    "  tagged:\n"
    "    path: tagged.jsonl\n"
    "    text_field: words\n"
    "    label_field: tags\n"
    "    label_type: tags\n"
    "    labels: [O, B-PER, I-PER]\n"
    "  corpus: {path: corpus.txt}\n"
    "models:\n"
    "  base:\n"
    "    architecture: {layers: 2, width: 16, heads: 4, max_length: 32}\n"
    "    train: {data: corpus, steps: 10}\n";

struct Loaded {
  LoadResult result;
  std::vector<std::string> errors;
};

Loaded load(const std::string& models) {
  TempWorkspace ws;
  ws.write("dev.jsonl", "{\"text\": \"fine\", \"label\": \"positive\"}\n");
  ws.write("scores.jsonl", "{\"text\": \"a\", \"other\": \"b\", \"label\": 0.5}\n");
  ws.write("topics.jsonl", "{\"text\": \"a\", \"label\": [\"sport\"]}\n");
  ws.write("tagged.jsonl", "{\"words\": [\"Ann\", \"ran\"], \"tags\": [\"B-PER\", \"O\"]}\n");
  Loaded l{ws.load(std::string(kTasks) + models), {}};
  for (const Diagnostic& d : l.result.errors) l.errors.push_back(d.to_string());
  return l;
}

std::string error_of(const std::string& models) {
  const Loaded l = load(models);
  INFO(models);
  REQUIRE(l.errors.size() == 1);
  return l.errors[0];
}

}  // namespace

TEST_CASE("each head task trains on its label type, and a head takes its data's labels") {
  const Loaded l = load(
      "  regress:\n"
      "    from: base\n"
      "    adapt: {head: {task: regression}}\n"
      "    train: {data: scores, steps: 1}\n"
      "  multi:\n"
      "    from: base\n"
      "    adapt: {head: {task: multi_label, threshold: 0.3}}\n"
      "    train: {data: topics, steps: 1}\n"
      "  ner:\n"
      "    from: base\n"
      "    adapt: {head: {task: token_classification}}\n"
      "    train: {data: tagged, steps: 1, class_weights: balanced}\n");
  INFO((l.errors.empty() ? std::string() : l.errors[0]));
  REQUIRE(l.result.workspace.has_value());
  const Workspace& ws = *l.result.workspace;
  CHECK(ws.find_model("regress")->adaptation.head->labels == std::vector<std::string>{"label"});
  CHECK(ws.head_task_of(*ws.find_model("multi")) == HeadTask::kMultiLabel);
  CHECK(ws.head_of(*ws.find_model("multi"))->decision_threshold() == 0.3f);
  CHECK(ws.find_model("ner")->adaptation.head->labels.size() == 3);
  CHECK(ws.find_dataset("scores")->text_pair_field == "other");
  CHECK(ws.find_model("ner")->training->class_weights.kind == ClassWeightsSpec::Kind::kBalanced);
}

TEST_CASE("a head on data of another label type is an error naming both") {
  CHECK(error_of("  regress:\n"
                 "    from: base\n"
                 "    adapt: {head: {task: regression}}\n"
                 "    train: {data: reviews, steps: 1}\n") ==
        "scion.yaml:26:12: error: dataset 'reviews' has label_type single, but a regression "
        "head trains on label_type number at models.regress.train.data; set label_type: "
        "number on a dataset with such labels");
  CHECK_THAT(
      error_of("  multi:\n"
               "    from: base\n"
               "    adapt: {head: {task: multi_label, labels: [sport]}}\n"
               "    train: {data: topics, steps: 1}\n"),
      Catch::Contains("dataset 'topics' has labels [sport, money] but the head outputs [sport]"));
}

TEST_CASE("head keys that do not fit the task are refused") {
  CHECK_THAT(error_of("  m:\n"
                      "    from: base\n"
                      "    adapt: {head: {threshold: 0.4}}\n"
                      "    train: {data: reviews, steps: 1}\n"),
             Catch::Contains("'threshold' applies only to task: multi_label"));
  CHECK_THAT(error_of("  m:\n"
                      "    from: base\n"
                      "    adapt: {head: {task: token_classification, pooling: mean}}\n"
                      "    train: {data: tagged, steps: 1}\n"),
             Catch::Contains("'pooling' does not apply to task: token_classification"));
  // The misspelt task is reported, with what follows from the default task it leaves.
  const Loaded misspelt = load(
      "  m:\n"
      "    from: base\n"
      "    adapt: {head: {task: regresion}}\n"
      "    train: {data: scores, steps: 1}\n");
  CHECK(std::any_of(misspelt.errors.begin(), misspelt.errors.end(), [](const std::string& e) {
    return e.find("unknown head task 'regresion'") != std::string::npos &&
           e.find("did you mean 'regression'") != std::string::npos;
  }));
}

TEST_CASE("keep_best and early stopping follow metrics the task records") {
  CHECK(
      error_of("  m:\n"
               "    from: base\n"
               "    adapt: {head: {task: regression}}\n"
               "    train: {data: scores, steps: 1, validation_split: 0.5, keep_best: val_f1}\n") ==
      "scion.yaml:26:71: error: a regression head records no val_f1 in validation at "
      "models.m.train.keep_best; choose one of val_loss, val_rmse, val_mae, val_pearson, "
      "val_spearman");
  const Loaded l = load(
      "  m:\n"
      "    from: base\n"
      "    adapt: {head: {}}\n"
      "    train: {data: reviews, steps: 1, validation: dev, keep_best: val_auc,\n"
      "            early_stopping: {metric: val_mcc, patience: 2}}\n");
  REQUIRE(l.result.workspace.has_value());
  CHECK(l.result.workspace->find_model("m")->training->keep_best == "val_auc");
  CHECK_THAT(error_of("  m:\n"
                      "    from: base\n"
                      "    adapt: {head: {}}\n"
                      "    train: {data: reviews, steps: 1, keep_best: val_f1}\n"),
             Catch::Contains("keep_best needs held-out data"));
  CHECK(validation_metrics(Objective::kClassification, HeadTask::kClassification, 3).size() == 7);
  CHECK(lower_is_better("val_rmse"));
  CHECK_FALSE(lower_is_better("val_spearman"));
}

TEST_CASE("a named dev set must be read as the training data is") {
  CHECK_THAT(error_of("  m:\n"
                      "    from: base\n"
                      "    adapt: {head: {}}\n"
                      "    train: {data: reviews, steps: 1, validation: topics}\n"),
             Catch::Contains("dataset 'topics' cannot validate a model trained on 'reviews': its "
                             "label_type is multi, the training data's single"));
  CHECK_THAT(
      error_of("  m:\n"
               "    from: base\n"
               "    adapt: {head: {}}\n"
               "    train: {data: reviews, steps: 1, validation: dev, validation_split: 0.2}\n"),
      Catch::Contains("both validation and validation_split are set"));
  CHECK_THAT(error_of("  m:\n"
                      "    from: base\n"
                      "    adapt: {head: {}}\n"
                      "    train: {data: reviews, steps: 1, validation: deev}\n"),
             Catch::Contains("did you mean 'dev'"));
}

TEST_CASE("class weights: one per label, for classification and tags only") {
  CHECK_THAT(error_of("  m:\n"
                      "    from: base\n"
                      "    adapt: {head: {}}\n"
                      "    train: {data: reviews, steps: 1, class_weights: [1, 2, 3]}\n"),
             Catch::Contains("3 weights for 2 labels"));
  CHECK_THAT(
      error_of("  m:\n"
               "    from: base\n"
               "    adapt: {head: {task: multi_label}}\n"
               "    train: {data: topics, steps: 1, class_weights: balanced}\n"),
      Catch::Contains("class_weights apply to classification and token_classification heads"));
  CHECK_THAT(error_of("  m:\n"
                      "    from: base\n"
                      "    adapt: {head: {}}\n"
                      "    train: {data: reviews, steps: 1, class_weights: [1, -2]}\n"),
             Catch::Contains("a weight above 0"));
}

TEST_CASE("label types and pairs are checked against the dataset's other keys") {
  TempWorkspace ws;
  ws.write("t.csv", "text,label\na,1\n");
  const auto errors = [&](const std::string& dataset) {
    std::vector<std::string> out;
    for (const Diagnostic& d : ws.load("datasets:\n" + dataset + "models: {}\n").errors)
      out.push_back(d.to_string());
    return out;
  };
  CHECK_THAT(errors("  d: {path: t.csv, label_type: number, labels: [a, b]}\n").at(0),
             Catch::Contains("'labels' does not apply to label_type: number"));
  CHECK_THAT(errors("  d: {path: t.csv, label_type: multi}\n").at(0),
             Catch::Contains("label_type multi needs the label names"));
  CHECK_THAT(errors("  d: {path: t.csv, label_type: tags, labels: [O, B-X]}\n").at(0),
             Catch::Contains("label_type tags needs a JSONL dataset"));
  CHECK_THAT(errors("  d: {path: t.csv, text_pair_field: text}\n").at(0),
             Catch::Contains("a second text field, other than text_field"));
  CHECK(errors("  d: {path: t.csv, label_type: multi, labels: [yes]}\n").empty());
}

TEST_CASE("the new keys enter a recipe only when set") {
  const Loaded plain = load(
      "  m:\n"
      "    from: base\n"
      "    adapt: {head: {}}\n"
      "    train: {data: reviews, steps: 1}\n");
  REQUIRE(plain.result.workspace.has_value());
  const nlohmann::json recipe =
      canonical_recipe(*plain.result.workspace, *plain.result.workspace->find_model("m"));
  CHECK(recipe["adapt"]["head"]["task"] == "classification");
  CHECK_FALSE(recipe["adapt"]["head"].contains("threshold"));
  for (const char* key : {"validation", "keep_best", "class_weights"})
    CHECK_FALSE(recipe["train"].contains(key));
  CHECK_FALSE(recipe["train"]["data"].contains("label_type"));
  CHECK_FALSE(recipe["train"]["data"].contains("text_pair_field"));
  const Loaded weighted = load(
      "  m:\n"
      "    from: base\n"
      "    adapt: {head: {}}\n"
      "    train: {data: reviews, steps: 1, class_weights: [1, 3]}\n");
  REQUIRE(weighted.result.workspace.has_value());
  CHECK(weighted.result.workspace->find_model("m")->recipe_hash !=
        plain.result.workspace->find_model("m")->recipe_hash);
}
