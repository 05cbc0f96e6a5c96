// Evaluating stored models on a labelled dataset (`scion eval`): what each model scores,
// as plain values the CLI prints and the lineage store keeps (lineage::EvalResult).
//
// Classifiers (workbench::ModelKind::kClassifier) answer every example; the metrics are
// accuracy, per-class precision, recall, F1 and support, their unweighted mean F1
// (macro-F1) and the confusion matrix (rows: the dataset's label, columns: the predicted
// one), over the model's head labels. Precision of a class the model never predicts is 0,
// as is F1 when precision and recall are both 0; macro-F1 averages the classes that occur
// in the data or in the predictions (scikit-learn's default), so a head label that no
// example has and the model never predicts does not pull it down.
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
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "lineage/store.h"
#include "runtime/backend.h"
#include "runtime/comm/communicator.h"
#include "runtime/data/dataset_reader.h"
#include "spec/workspace.h"
#include "workbench/stored_family.h"

namespace scion::workbench {

struct ClassMetrics {
  std::string label;
  double precision = 0;
  double recall = 0;
  double f1 = 0;
  std::int64_t support = 0;    // examples whose true label this is
  std::int64_t predicted = 0;  // examples the model gave this label
};

struct ClassificationMetrics {
  std::int64_t rows = 0;
  double accuracy = 0;
  double macro_f1 = 0;
  std::vector<ClassMetrics> per_class;               // the head's label order
  std::vector<std::vector<std::int64_t>> confusion;  // [true label][predicted label]
};

// Metrics of `predicted` against `truth`, both indices into `labels`.
// REQUIRES: equal lengths, every index < labels.size().
ClassificationMetrics classification_metrics(const std::vector<std::string>& labels,
                                             std::span<const std::int32_t> truth,
                                             std::span<const std::int32_t> predicted);

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

nlohmann::json to_json(const ClassificationMetrics& metrics);
nlohmann::json to_json(const PerplexityMetrics& metrics);

// The examples to evaluate on: a dataset of the spec by name, or a data file. A file is
// read as the spec reads one (format from its extension: .jsonl, .csv, .tsv, .txt; fields
// `text` and `label`), its labels named by `labels` (the classifiers' head labels).
struct EvalData {
  std::string name;    // the spec's dataset name, or the file as given
  std::string digest;  // SHA-256 of the file's bytes
  spec::Dataset dataset;
  data::ExampleSet examples;
};

// The head labels of the classifiers among `models`, in first-seen order: a data file's
// labels are read by these names (eval_data's `labels`).
std::vector<std::string> head_labels(const spec::Workspace& ws,
                                     const std::vector<std::string>& models);

// Errors: kNotFound naming the spec's datasets when `name_or_file` is neither a dataset
// nor a file, kSpecError for an unknown extension and for bad rows (file:line), kInvalidArgument for
// an empty dataset.
Result<EvalData> eval_data(const spec::Workspace& ws, const std::string& name_or_file,
                           const std::vector<std::string>& labels);

struct ModelEvaluation {
  std::string model;
  std::string model_version;  // the recipe hash of the parameters evaluated
  ModelKind kind = ModelKind::kClassifier;
  nlohmann::json metrics;     // to_json() of ClassificationMetrics or PerplexityMetrics
};

// Evaluates `models` (REQUIRES: loaded in `family` when `loaded` is ok) on `data` in one
// shared pass. Under mpirun (`comm` with several ranks) every rank calls it with the
// same arguments and its own `loaded` (the status of loading `family`): each evaluates a
// contiguous share of the examples (workbench/sharded_evaluation.h) and rank 0 alone
// gets the results; the other ranks get an empty list. `comm` null: one process.
// Errors: `loaded`'s (on rank 0 the lowest failing rank's), a classifier on unlabelled
// data, a dataset label that is not one of a classifier's head labels, a text too long
// for a language model to score (file:line), and the evaluators' errors.
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
