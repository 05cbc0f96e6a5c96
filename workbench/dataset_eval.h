// Evaluating stored models on a labelled dataset (`scion eval`): what each model scores,
// as plain values the CLI prints and the lineage store keeps (lineage::EvalResult).
//
// Head models (workbench::ModelKind::kClassifier) answer every example, and score by their
// task (the metrics' definitions are runtime/metrics/'s): a classifier's accuracy,
// per-class precision, recall, F1 and support, macro, micro and weighted F1, MCC,
// expected calibration error, ROC-AUC for two classes and the confusion matrix (rows:
// the dataset's label, columns: the predicted one), over the model's head labels; a
// regression head's MSE, RMSE, MAE, Pearson and Spearman correlation (per output too); a
// multi-label head's micro and macro F1, subset accuracy and Hamming loss at its
// threshold, per label too; a token classifier's entity precision, recall and F1
// (seqeval's reading of its IOB tags, per type too) and word accuracy. Each result's
// metrics say their "task".
//
// Language models score each example's text as a continuation of nothing: a causal LM
// log p(text | BOS), a masked LM the pseudo-log-likelihood (runtime/evaluation/
// continuation_scorer.h); on a prompt/completion dataset, each completion after its
// prompt, log p(completion | BOS prompt), as training takes its loss (but for the EOS). Perplexity
// is exp(-Σ log p / Σ tokens) over the whole dataset; for a masked LM it is a pseudo-perplexity
// (Salazar et al., ACL 2020) and says so.
//
// Every model runs in one pass through workbench::evaluate_models (FamilyEvaluator and
// ContinuationScorer): models of one base share the trunk's layer applications.
#pragma once

#include <cstdint>
#include <optional>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <vector>

#include "lineage/store.h"
#include "runtime/backend.h"
#include "runtime/comm/communicator.h"
#include "runtime/data/dataset_reader.h"
#include "runtime/metrics/classification_metrics.h"
#include "runtime/metrics/entity_metrics.h"
#include "runtime/metrics/multi_label_metrics.h"
#include "runtime/metrics/regression_metrics.h"
#include "spec/workspace.h"
#include "workbench/stored_family.h"

namespace scion::workbench {

struct PerplexityMetrics {
  std::int64_t rows = 0;
  std::int64_t tokens = 0;      // tokens scored, over all rows
  double mean_nll = 0;          // -Σ log p / tokens, in nats
  double perplexity = 0;        // exp(mean_nll)
  bool pseudo = false;          // a masked LM's pseudo-perplexity
};

// Perplexity of a dataset from each row's summed log-probability and token count.
// REQUIRES: equal lengths; Σ tokens > 0.
PerplexityMetrics perplexity_metrics(std::span<const double> logprobs,
                                     std::span<const std::size_t> tokens, bool pseudo);

nlohmann::json to_json(const runtime::ClassificationMetrics& metrics);
nlohmann::json to_json(const runtime::RegressionMetrics& metrics);
nlohmann::json to_json(const runtime::MultiLabelMetrics& metrics);
nlohmann::json to_json(const runtime::EntityMetrics& metrics);
nlohmann::json to_json(const PerplexityMetrics& metrics);

// How to read the examples (`scion eval --text-field/--pair-field/--label-field`): field
// (or column) names; empty keeps the dataset's (a file's: `text`, none, `label`).
struct EvalFields {
  std::string text;
  std::string pair;
  std::string label;
};

// The examples to evaluate on: a dataset of the spec by name, or a data file. A file is
// read as the spec reads one (format from its extension: .jsonl, .csv, .tsv, .txt; fields
// `text` and `label` unless `fields` say otherwise), its labels named by the head models'
// labels and of the label type their task trains on (eval_label_type).
struct EvalData {
  std::string name;    // the spec's dataset name, or the file as given
  std::string digest;  // SHA-256 of the file's bytes
  spec::Dataset dataset;
  data::ExampleSet examples;
};

// The head labels of the classifiers among `models`, in first-seen order: a data file's
// labels are read by these names.
std::vector<std::string> head_labels(const spec::Workspace& ws,
                                     const std::vector<std::string>& models);

// The label type a data file's rows are read with for `models`: the one their heads' task
// trains on; nullopt for language models alone. Errors: kInvalidArgument when the head
// models have different tasks (evaluate each task on its own data).
Result<std::optional<spec::LabelType>> eval_label_type(const spec::Workspace& ws,
                                                       const std::vector<std::string>& models);

// The examples to evaluate on, a file's rows read with `labels` (the head models' labels,
// head_labels) as `label_type` says. Errors: kNotFound naming the spec's datasets when
// `name_or_file` is neither a dataset nor a file, kSpecError for an unknown extension and
// for bad rows (file:line), kInvalidArgument for an empty dataset and for fields given for
// a plain-text file.
Result<EvalData> eval_data(const spec::Workspace& ws, const std::string& name_or_file,
                           const std::vector<std::string>& labels,
                           spec::LabelType label_type = spec::LabelType::kSingle,
                           const EvalFields& fields = {});

struct ModelEvaluation {
  std::string model;
  std::string model_version;  // the recipe hash of the parameters evaluated
  ModelKind kind = ModelKind::kClassifier;
  nlohmann::json metrics;  // to_json() of the task's metrics, or of PerplexityMetrics
};

// Evaluates `models` (REQUIRES: loaded in `family` when `loaded` is ok) on `data` in one
// shared pass. Under mpirun (`comm` with several ranks) every rank calls it with the
// same arguments and its own `loaded` (the status of loading `family`): each evaluates a
// contiguous share of the examples (workbench/sharded_evaluation.h) and rank 0 alone
// gets the results; the other ranks get an empty list. `comm` null: one process.
// Errors: `loaded`'s (on rank 0 the lowest failing rank's), a head model on unlabelled
// data or on labels of another task's type, a dataset label that is not one of a
// classifier's head labels, regression targets of another count than its outputs, a text
// too long for a language model to score (file:line), and the evaluators' errors.
Result<std::vector<ModelEvaluation>> evaluate_on_data(const spec::Workspace& ws,
                                                      const StoredFamily& family,
                                                      runtime::Backend& backend,
                                                      const std::vector<std::string>& models,
                                                      const EvalData& data, int chunk_size,
                                                      runtime::Communicator* comm = nullptr,
                                                      const Status& loaded = Status::ok());

// Records `results` (evaluate_on_data's, on `data`) in `store` against each model's
// version, in one transaction.
Status record_evaluations(lineage::LineageStore& store, const EvalData& data,
                          const std::vector<ModelEvaluation>& results);

}  // namespace scion::workbench
