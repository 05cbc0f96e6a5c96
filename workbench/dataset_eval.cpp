#include "workbench/dataset_eval.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>

#include "base/regular_file.h"
#include "runtime/evaluation/continuation_scorer.h"
#include "runtime/evaluation/family_evaluator.h"
#include "spec/file_digest.h"
#include "workbench/behaviour_suite.h"
#include "workbench/sharded_evaluation.h"

namespace scion::workbench {
namespace {

std::optional<spec::DatasetFormat> format_of(const std::filesystem::path& path) {
  const std::string ext = path.extension().string();
  if (ext == ".jsonl") return spec::DatasetFormat::kJsonl;
  if (ext == ".csv") return spec::DatasetFormat::kCsv;
  if (ext == ".tsv") return spec::DatasetFormat::kTsv;
  if (ext == ".txt") return spec::DatasetFormat::kText;
  return std::nullopt;
}

Result<spec::Dataset> dataset_of_file(const std::string& file,
                                      const std::vector<std::string>& labels,
                                      const EvalFields& fields, spec::LabelType label_type) {
  const auto format = format_of(file);
  if (!format)
    return spec_error("--data " + file +
                      ": the extension does not say how to read it; name a file ending in "
                      ".jsonl, .csv, .tsv or .txt, or a dataset of the spec");
  spec::Dataset d;
  d.name = file;
  d.path = std::filesystem::absolute(file);
  d.format = *format;
  d.location = {file, 0, 0};
  if (d.format == spec::DatasetFormat::kText) {
    if (!fields.text.empty() || !fields.pair.empty() || !fields.label.empty())
      return invalid_argument("--data " + file +
                              ": a .txt file has one text per line and no fields; drop "
                              "--text-field, --pair-field and --label-field");
    d.label_field.clear();
  } else {
    d.label_type = label_type;
    if (label_type != spec::LabelType::kNumber) d.labels = labels;
    if (!fields.text.empty()) d.text_field = fields.text;
    d.text_pair_field = fields.pair;
    if (!fields.label.empty()) d.label_field = fields.label;
    // Only language models are asked: they read no labels.
    if (labels.empty() && label_type != spec::LabelType::kNumber) d.label_field.clear();
  }
  auto digest = spec::sha256_file(d.path);
  if (!digest) return digest.status();
  d.digest = *digest;
  return d;
}

std::vector<std::string> dataset_names(const spec::Workspace& ws) {
  std::vector<std::string> names;
  for (const auto& d : ws.datasets) names.push_back(d.name);
  return names;
}

// The dataset's label index `k` as an index into a head's labels.
Result<std::int32_t> head_index(const std::string& model,
                                const std::vector<std::string>& head_labels, const EvalData& data,
                                const data::Example& e, std::int32_t k) {
  const std::string& name = data.dataset.labels.at(static_cast<std::size_t>(k));
  const auto at = std::find(head_labels.begin(), head_labels.end(), name);
  if (at == head_labels.end())
    return invalid_argument(fmt::format(
        "{}:{}: label '{}' is not one of '{}''s labels ({}); evaluate it on data labelled with "
        "its labels",
        data.dataset.path.string(), e.line, name, model, fmt::join(head_labels, ", ")));
  return static_cast<std::int32_t>(at - head_labels.begin());
}

// The label type each head task is scored on.
spec::LabelType label_type_of(spec::HeadTask task) {
  switch (task) {
    case spec::HeadTask::kRegression:
      return spec::LabelType::kNumber;
    case spec::HeadTask::kMultiLabel:
      return spec::LabelType::kMulti;
    case spec::HeadTask::kTokenClassification:
      return spec::LabelType::kTags;
    case spec::HeadTask::kClassification:
      break;
  }
  return spec::LabelType::kSingle;
}

// What a head model is scored against, in its own label order: a class (single), a 0/1
// per label (multi), the target values (number), a tag per word (tags).
struct Truth {
  std::vector<std::int32_t> classes;
  std::vector<float> values;  // rows × K
  std::vector<std::vector<std::int32_t>> tags;
};

Result<Truth> truth_for(const std::string& model, const runtime::EvaluatedModel& head,
                        const EvalData& data) {
  const spec::HeadTask task = head.weights->classifier.task;
  if (!data.examples.labelled)
    return invalid_argument(fmt::format(
        "'{}' has no labels, so '{}' cannot be scored on it; give a dataset with labels (a "
        "`labels:` list in the spec, or a `label` field in the file)",
        data.name, model));
  if (data.examples.label_type != label_type_of(task))
    return invalid_argument(fmt::format(
        "'{}' holds labels of type {}, but '{}' is a {} head, scored on label_type {}; evaluate "
        "it on data of that type",
        data.name, spec::label_type_name(data.examples.label_type), model,
        spec::head_task_name(task), spec::label_type_name(label_type_of(task))));
  Truth truth;
  const auto K = head.labels.size();
  for (const data::Example& e : data.examples.examples) {
    switch (task) {
      case spec::HeadTask::kClassification: {
        auto k = head_index(model, head.labels, data, e, e.label);
        if (!k) return k.status();
        truth.classes.push_back(*k);
        break;
      }
      case spec::HeadTask::kMultiLabel: {
        std::vector<float> hot(K, 0.0f);
        for (std::int32_t label : e.label_set) {
          auto k = head_index(model, head.labels, data, e, label);
          if (!k) return k.status();
          hot[static_cast<std::size_t>(*k)] = 1.0f;
        }
        truth.values.insert(truth.values.end(), hot.begin(), hot.end());
        break;
      }
      case spec::HeadTask::kRegression:
        if (e.values.size() != K)
          return invalid_argument(
              fmt::format("{}:{}: {} target value(s), but '{}' has {} output(s) ({})",
                          data.dataset.path.string(), e.line, e.values.size(), model, K,
                          fmt::join(head.labels, ", ")));
        truth.values.insert(truth.values.end(), e.values.begin(), e.values.end());
        break;
      case spec::HeadTask::kTokenClassification: {
        std::vector<std::int32_t> tags;
        for (std::int32_t tag : e.tags) {
          auto k = head_index(model, head.labels, data, e, tag);
          if (!k) return k.status();
          tags.push_back(*k);
        }
        truth.tags.push_back(std::move(tags));
        break;
      }
    }
  }
  return truth;
}

// The model input of an example.
runtime::ModelInput input_of(const data::Example& e, bool pairs) {
  return {e.text, pairs ? std::optional<std::string>(e.text_pair) : std::nullopt};
}

// A head model's metrics from its outputs on every example, against `truth`.
nlohmann::json head_metrics(const runtime::EvaluatedModel& head, const Truth& truth,
                            const EvalData& data, const FamilyOutputs& outputs,
                            const std::string& name) {
  std::vector<float> scores;
  std::vector<std::vector<std::int32_t>> predicted_tags, true_tags;
  std::size_t row = 0;
  for (const data::Example& e : data.examples.examples) {
    const assertions::ModelOutput& o =
        outputs.at(name, input_key(input_of(e, data.examples.pairs)));
    const std::vector<float>& got =
        o.task == spec::HeadTask::kRegression ? o.values : o.probabilities;
    scores.insert(scores.end(), got.begin(), got.end());
    if (o.task == spec::HeadTask::kTokenClassification) {
      // The words the model read: truncation may have cut the sentence's end off.
      std::vector<std::int32_t> kept_truth, kept_predicted;
      for (std::size_t w = 0; w < o.word_probabilities.size(); ++w) {
        if (o.word_probabilities[w].empty()) continue;
        kept_truth.push_back(truth.tags[row][w]);
        kept_predicted.push_back(runtime::argmax(o.word_probabilities[w]));
      }
      true_tags.push_back(std::move(kept_truth));
      predicted_tags.push_back(std::move(kept_predicted));
    }
    ++row;
  }
  nlohmann::json metrics;
  switch (head.weights->classifier.task) {
    case spec::HeadTask::kClassification:
      metrics = to_json(runtime::classification_metrics(head.labels, truth.classes, scores));
      break;
    case spec::HeadTask::kRegression:
      metrics = to_json(runtime::regression_metrics(head.labels, scores, truth.values));
      break;
    case spec::HeadTask::kMultiLabel:
      metrics =
          to_json(runtime::multi_label_metrics(head.labels, scores, truth.values, head.threshold));
      break;
    case spec::HeadTask::kTokenClassification:
      metrics = to_json(runtime::entity_metrics(head.labels, true_tags, predicted_tags));
      break;
  }
  metrics["task"] = spec::head_task_name(head.weights->classifier.task);
  return metrics;
}

// What a language model scores of an example: the completion of a prompt/completion
// dataset (after its prompt), else the whole text (after nothing).
const std::string& scored_text(const EvalData& data, const data::Example& e) {
  return data.examples.completions ? e.completion : e.text;
}
const std::string& scored_input(const EvalData& data, const data::Example& e) {
  static const std::string nothing;
  return data.examples.completions ? e.text : nothing;
}

Status check_scorable(const std::string& model, const runtime::ScoredModel& lm,
                      const EvalData& data) {
  const std::size_t room = runtime::max_continuation_tokens(*lm.weights);
  for (const data::Example& e : data.examples.examples) {
    const std::size_t tokens = runtime::continuation_tokens(lm, scored_text(data, e));
    const char* what = data.examples.completions ? "completion" : "text";
    if (tokens == 0)
      return invalid_argument(
          fmt::format("{}:{}: the {} is empty; language model '{}' has "
                      "nothing to score",
                      data.dataset.path.string(), e.line, what, model));
    if (tokens > room)
      return invalid_argument(fmt::format(
          "{}:{}: the {} is {} tokens, but language model '{}' scores at most {} in one row "
          "(max_length {}); split long texts into shorter rows",
          data.dataset.path.string(), e.line, what, tokens, model, room,
          lm.weights->arch.max_length));
  }
  return Status::ok();
}

}  // namespace

PerplexityMetrics perplexity_metrics(std::span<const double> logprobs,
                                     std::span<const std::size_t> tokens, bool pseudo) {
  PerplexityMetrics m{.rows = static_cast<std::int64_t>(logprobs.size()), .pseudo = pseudo};
  double total = 0;
  for (std::size_t i = 0; i < logprobs.size(); ++i) {
    total += logprobs[i];
    m.tokens += static_cast<std::int64_t>(tokens[i]);
  }
  m.mean_nll = -total / static_cast<double>(m.tokens);
  m.perplexity = std::exp(m.mean_nll);
  return m;
}

namespace {

nlohmann::json optional_json(const std::optional<double>& v) {
  return v ? nlohmann::json(*v) : nlohmann::json();
}

nlohmann::json class_json(const runtime::ClassMetrics& c) {
  return {{"label", c.label}, {"precision", c.precision}, {"recall", c.recall},
          {"f1", c.f1},       {"support", c.support},     {"predicted", c.predicted}};
}

}  // namespace

nlohmann::json to_json(const runtime::ClassificationMetrics& m) {
  nlohmann::json per_class = nlohmann::json::array();
  std::vector<std::string> labels;
  for (const runtime::ClassMetrics& c : m.per_class) {
    labels.push_back(c.label);
    per_class.push_back(class_json(c));
  }
  return {{"rows", m.rows},
          {"accuracy", m.accuracy},
          {"macro_f1", m.macro_f1},
          {"micro_f1", m.micro_f1},
          {"weighted_f1", m.weighted_f1},
          {"mcc", m.mcc},
          {"ece", m.ece},
          {"roc_auc", optional_json(m.roc_auc)},
          {"labels", labels},
          {"per_class", per_class},
          {"confusion", m.confusion}};
}

nlohmann::json to_json(const runtime::RegressionMetrics& m) {
  nlohmann::json per_output = nlohmann::json::array();
  for (const runtime::OutputMetrics& o : m.per_output)
    per_output.push_back({{"label", o.label},
                          {"rmse", o.rmse},
                          {"mae", o.mae},
                          {"pearson", optional_json(o.pearson)},
                          {"spearman", optional_json(o.spearman)}});
  return {{"rows", m.rows},
          {"mse", m.mse},
          {"rmse", m.rmse},
          {"mae", m.mae},
          {"pearson", optional_json(m.pearson)},
          {"spearman", optional_json(m.spearman)},
          {"per_output", per_output}};
}

nlohmann::json to_json(const runtime::MultiLabelMetrics& m) {
  nlohmann::json per_label = nlohmann::json::array();
  for (const runtime::ClassMetrics& c : m.per_label) per_label.push_back(class_json(c));
  return {{"rows", m.rows},
          {"threshold", m.threshold},
          {"micro_f1", m.micro_f1},
          {"macro_f1", m.macro_f1},
          {"subset_accuracy", m.subset_accuracy},
          {"hamming_loss", m.hamming_loss},
          {"per_label", per_label}};
}

nlohmann::json to_json(const runtime::EntityMetrics& m) {
  nlohmann::json per_type = nlohmann::json::array();
  for (const runtime::EntityTypeMetrics& t : m.per_type)
    per_type.push_back({{"type", t.type},
                        {"precision", t.precision},
                        {"recall", t.recall},
                        {"f1", t.f1},
                        {"support", t.support},
                        {"predicted", t.predicted}});
  return {{"rows", m.sentences}, {"words", m.words}, {"precision", m.precision},
          {"recall", m.recall},  {"f1", m.f1},       {"accuracy", m.accuracy},
          {"per_type", per_type}};
}

nlohmann::json to_json(const PerplexityMetrics& m) {
  return {{"rows", m.rows},
          {"tokens", m.tokens},
          {"mean_nll", m.mean_nll},
          {"perplexity", m.perplexity},
          {"pseudo", m.pseudo}};
}

Result<std::optional<spec::LabelType>> eval_label_type(const spec::Workspace& ws,
                                                       const std::vector<std::string>& models) {
  std::optional<spec::HeadTask> task;
  std::string first;
  for (const std::string& name : models) {
    const spec::Model& model = *ws.find_model(name);
    if (model_kind(ws, model) != ModelKind::kClassifier) continue;
    const spec::HeadTask t = ws.head_task_of(model);
    if (task && *task != t)
      return invalid_argument(fmt::format(
          "'{}' is a {} head and '{}' a {} head: a file's labels are read one way; evaluate "
          "them with separate `scion eval` commands",
          first, spec::head_task_name(*task), name, spec::head_task_name(t)));
    if (!task) first = name;
    task = t;
  }
  if (!task) return std::optional<spec::LabelType>();
  return std::optional<spec::LabelType>(label_type_of(*task));
}

Result<EvalData> eval_data(const spec::Workspace& ws, const std::string& name_or_file,
                           const std::vector<std::string>& labels, spec::LabelType label_type,
                           const EvalFields& fields) {
  EvalData out;
  out.name = name_or_file;
  if (const spec::Dataset* d = ws.find_dataset(name_or_file)) {
    out.dataset = *d;
    if (!fields.text.empty()) out.dataset.text_field = fields.text;
    if (!fields.pair.empty()) out.dataset.text_pair_field = fields.pair;
    if (!fields.label.empty()) out.dataset.label_field = fields.label;
  } else if (std::filesystem::is_regular_file(name_or_file)) {
    auto d = dataset_of_file(name_or_file, labels, fields, label_type);
    if (!d) return d.status();
    out.dataset = std::move(*d);
  } else if (std::error_code ec; std::filesystem::exists(name_or_file, ec)) {
    return invalid_argument("--data " + name_or_file + ": " +
                            check_regular_file(name_or_file, FollowLinks::kYes).message());
  } else {
    const auto known = dataset_names(ws);
    return not_found(fmt::format(
        "--data {}: no dataset of that name in the spec (it has: {}) and no such file; name a "
        "dataset or a .jsonl, .csv, .tsv or .txt file",
        name_or_file, known.empty() ? std::string("none") : fmt::format("{}", fmt::join(known, ", "))));
  }
  out.digest = out.dataset.digest;
  auto examples = data::read_dataset(out.dataset);
  if (!examples) return examples.status();
  if (examples->examples.empty())
    return invalid_argument("--data " + name_or_file + ": the dataset has no examples");
  out.examples = std::move(*examples);
  return out;
}

Result<std::vector<ModelEvaluation>> evaluate_on_data(const spec::Workspace& ws,
                                                      const StoredFamily& family,
                                                      runtime::Backend& backend,
                                                      const std::vector<std::string>& models,
                                                      const EvalData& data, int chunk_size,
                                                      runtime::Communicator* comm,
                                                      const Status& loaded) {
  // Everything that could refuse the data is checked before the pass; a rank that fails
  // here still takes part in the sharded pass, with its error.
  EvaluationPlan plan;
  std::map<std::string, Truth> truths;
  auto check_and_plan = [&]() -> Status {
    SCION_RETURN_IF_ERROR(loaded);
    for (const std::string& name : models) {
      if (const runtime::ScoredModel* lm = family.language_model(name)) {
        SCION_RETURN_IF_ERROR(check_scorable(name, *lm, data));
        for (const data::Example& e : data.examples.examples)
          plan.add_continuation(scored_input(data, e), scored_text(data, e),
                                fmt::format("{}:{}", data.dataset.path.string(), e.line));
      } else {
        auto truth = truth_for(name, *family.classifier(name), data);
        if (!truth) return truth.status();
        truths[name] = std::move(*truth);
        for (const data::Example& e : data.examples.examples)
          plan.add_input(input_of(e, data.examples.pairs));
      }
    }
    return Status::ok();
  };
  const Status ready = check_and_plan();
  runtime::SingleProcessCommunicator solo;
  runtime::Communicator& ranks = comm ? *comm : solo;
  auto outputs = evaluate_models_sharded(family, backend, models, plan, chunk_size, ranks, ready);
  if (!outputs) return outputs.status();
  if (ranks.rank() != 0) return std::vector<ModelEvaluation>();  // sent to rank 0

  std::vector<ModelEvaluation> results;
  for (const std::string& name : models) {
    const spec::Model& model = *ws.find_model(name);
    ModelEvaluation r{.model = name, .model_version = model.recipe_hash};
    if (const runtime::ScoredModel* lm = family.language_model(name)) {
      r.kind = ModelKind::kLanguageModel;
      std::vector<double> logprobs;
      std::vector<std::size_t> tokens;
      for (const data::Example& e : data.examples.examples) {
        const assertions::ModelOutput& o = outputs->at(name, scored_input(data, e));
        logprobs.push_back(o.continuation_logprobs.at(scored_text(data, e)));
        tokens.push_back(o.continuation_tokens.at(scored_text(data, e)));
      }
      const bool pseudo = lm->weights->objective == spec::Objective::kMaskedLm;
      r.metrics = to_json(perplexity_metrics(logprobs, tokens, pseudo));
    } else {
      r.metrics = head_metrics(*family.classifier(name), truths[name], data, *outputs, name);
    }
    results.push_back(std::move(r));
  }
  return results;
}

std::vector<std::string> head_labels(const spec::Workspace& ws,
                                     const std::vector<std::string>& models) {
  std::vector<std::string> labels;
  for (const std::string& name : models)
    if (auto own = classifier_labels(ws, *ws.find_model(name)))
      for (const std::string& l : *own)
        if (std::find(labels.begin(), labels.end(), l) == labels.end()) labels.push_back(l);
  return labels;
}

Status record_evaluations(lineage::LineageStore& store, const EvalData& data,
                          const std::vector<ModelEvaluation>& results) {
  std::vector<lineage::EvalResult> rows;
  for (const ModelEvaluation& r : results)
    rows.push_back({.model = r.model,
                    .model_version = r.model_version,
                    .dataset = data.name,
                    .dataset_digest = data.digest,
                    .rows = data.examples.rows(),
                    .kind = kind_name(r.kind),
                    .metrics = r.metrics});
  return store.record_eval_results(rows);
}

}  // namespace scion::workbench
