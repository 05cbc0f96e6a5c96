#include "workbench/dataset_eval.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>

#include "runtime/evaluation/continuation_scorer.h"
#include "spec/file_digest.h"
#include "workbench/behaviour_suite.h"
#include "workbench/sharded_evaluation.h"

namespace scion::workbench {
namespace {

double ratio(std::int64_t num, std::int64_t den) {
  return den == 0 ? 0.0 : static_cast<double>(num) / static_cast<double>(den);
}

std::optional<spec::DatasetFormat> format_of(const std::filesystem::path& path) {
  const std::string ext = path.extension().string();
  if (ext == ".jsonl") return spec::DatasetFormat::kJsonl;
  if (ext == ".csv") return spec::DatasetFormat::kCsv;
  if (ext == ".tsv") return spec::DatasetFormat::kTsv;
  if (ext == ".txt") return spec::DatasetFormat::kText;
  return std::nullopt;
}

Result<spec::Dataset> dataset_of_file(const std::string& file,
                                      const std::vector<std::string>& labels) {
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
    d.label_field.clear();
  } else {
    d.labels = labels;
    if (labels.empty()) d.label_field.clear();  // only language models read it
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

std::int32_t argmax(const std::vector<float>& p) {
  return static_cast<std::int32_t>(std::max_element(p.begin(), p.end()) - p.begin());
}

// The examples' true labels as indices into the classifier's labels.
Result<std::vector<std::int32_t>> truth_for(const std::string& model,
                                            const std::vector<std::string>& head_labels,
                                            const EvalData& data) {
  if (!data.examples.labelled)
    return invalid_argument(fmt::format(
        "'{}' has no labels, so classifier '{}' cannot be scored on it; give a dataset with "
        "labels (a `labels:` list in the spec, or a `label` field in the file)",
        data.name, model));
  std::vector<std::int32_t> truth;
  for (const data::Example& e : data.examples.examples) {
    const std::string& name = data.dataset.labels.at(static_cast<std::size_t>(e.label));
    const auto at = std::find(head_labels.begin(), head_labels.end(), name);
    if (at == head_labels.end())
      return invalid_argument(fmt::format(
          "{}:{}: label '{}' is not one of classifier '{}''s labels ({}); evaluate it on data "
          "labelled with its classes",
          data.dataset.path.string(), e.line, name, model, fmt::join(head_labels, ", ")));
    truth.push_back(static_cast<std::int32_t>(at - head_labels.begin()));
  }
  return truth;
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

ClassificationMetrics classification_metrics(const std::vector<std::string>& labels,
                                             std::span<const std::int32_t> truth,
                                             std::span<const std::int32_t> predicted) {
  const std::size_t k = labels.size();
  ClassificationMetrics m;
  m.rows = static_cast<std::int64_t>(truth.size());
  m.confusion.assign(k, std::vector<std::int64_t>(k, 0));
  std::int64_t correct = 0;
  for (std::size_t i = 0; i < truth.size(); ++i) {
    ++m.confusion[static_cast<std::size_t>(truth[i])][static_cast<std::size_t>(predicted[i])];
    correct += truth[i] == predicted[i];
  }
  m.accuracy = ratio(correct, m.rows);
  double f1_sum = 0;
  int averaged = 0;
  for (std::size_t c = 0; c < k; ++c) {
    ClassMetrics cm{.label = labels[c]};
    for (std::size_t j = 0; j < k; ++j) {
      cm.support += m.confusion[c][j];
      cm.predicted += m.confusion[j][c];
    }
    const std::int64_t hits = m.confusion[c][c];
    cm.precision = ratio(hits, cm.predicted);
    cm.recall = ratio(hits, cm.support);
    const double pr = cm.precision + cm.recall;
    cm.f1 = pr == 0 ? 0.0 : 2 * cm.precision * cm.recall / pr;
    if (cm.support > 0 || cm.predicted > 0) {
      f1_sum += cm.f1;
      ++averaged;
    }
    m.per_class.push_back(cm);
  }
  m.macro_f1 = averaged == 0 ? 0.0 : f1_sum / averaged;
  return m;
}

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

nlohmann::json to_json(const ClassificationMetrics& m) {
  nlohmann::json per_class = nlohmann::json::array();
  std::vector<std::string> labels;
  for (const ClassMetrics& c : m.per_class) {
    labels.push_back(c.label);
    per_class.push_back({{"label", c.label},
                         {"precision", c.precision},
                         {"recall", c.recall},
                         {"f1", c.f1},
                         {"support", c.support},
                         {"predicted", c.predicted}});
  }
  return {{"rows", m.rows},
          {"accuracy", m.accuracy},
          {"macro_f1", m.macro_f1},
          {"labels", labels},
          {"per_class", per_class},
          {"confusion", m.confusion}};
}

nlohmann::json to_json(const PerplexityMetrics& m) {
  return {{"rows", m.rows},
          {"tokens", m.tokens},
          {"mean_nll", m.mean_nll},
          {"perplexity", m.perplexity},
          {"pseudo", m.pseudo}};
}

Result<EvalData> eval_data(const spec::Workspace& ws, const std::string& name_or_file,
                           const std::vector<std::string>& labels) {
  EvalData out;
  out.name = name_or_file;
  if (const spec::Dataset* d = ws.find_dataset(name_or_file)) {
    out.dataset = *d;
  } else if (std::filesystem::is_regular_file(name_or_file)) {
    auto d = dataset_of_file(name_or_file, labels);
    if (!d) return d.status();
    out.dataset = std::move(*d);
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
  std::map<std::string, std::vector<std::int32_t>> truths;
  auto check_and_plan = [&]() -> Status {
    SCION_RETURN_IF_ERROR(loaded);
    for (const std::string& name : models) {
      if (const runtime::ScoredModel* lm = family.language_model(name)) {
        SCION_RETURN_IF_ERROR(check_scorable(name, *lm, data));
        for (const data::Example& e : data.examples.examples)
          plan.add_continuation(scored_input(data, e), scored_text(data, e),
                                fmt::format("{}:{}", data.dataset.path.string(), e.line));
      } else {
        auto truth = truth_for(name, family.classifier(name)->labels, data);
        if (!truth) return truth.status();
        truths[name] = std::move(*truth);
        for (const data::Example& e : data.examples.examples) plan.add_text(e.text);
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
      std::vector<std::int32_t> predicted;
      for (const data::Example& e : data.examples.examples)
        predicted.push_back(argmax(outputs->at(name, e.text).probabilities));
      r.metrics =
          to_json(classification_metrics(family.classifier(name)->labels, truths[name], predicted));
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
