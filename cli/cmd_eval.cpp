// `scion eval MODEL... --data NAME|FILE`: stored models scored on a dataset, all in one
// shared-trunk pass (workbench/dataset_eval.h): each head model by its task (classifiers'
// accuracy, F1s, MCC, calibration, ROC-AUC and confusion matrix; regression's errors and
// correlations; multi-label F1s and subset accuracy; token classifiers' entity F1);
// perplexity for language models.
// Each result is recorded in the lineage store against the model's exact version (its
// recipe hash) and the data's digest, and `scion lineage show MODEL` lists it.
#include <fmt/format.h>

#include <algorithm>
#include <iostream>
#include <set>

#include "cli/cmd_lineage_support.h"
#include "cli/command_context.h"
#include "cli/commands.h"
#include "cli/exit_codes.h"
#include "cli/output.h"
#include "workbench/dataset_eval.h"
#include "workbench/model_lookup.h"
#include "workbench/model_version.h"
#include "workbench/version_rounds.h"

namespace scion::cli {
namespace {

struct EvalOptions {
  std::vector<std::string> models;
  std::string data;
  workbench::EvalFields fields;
  int chunk_size = 64;
  bool record = true;
};

// "0.8123", or "n/a" for a metric the data leaves undefined (null).
std::string number(const nlohmann::json& v) {
  return v.is_null() ? std::string("n/a") : fmt::format("{:.4f}", v.get<double>());
}

void print_classifier(const nlohmann::json& m) {
  std::cout << fmt::format("  accuracy {:.4f}   macro-F1 {:.4f}   ({} rows)\n",
                           m["accuracy"].get<double>(), m["macro_f1"].get<double>(),
                           m["rows"].get<std::int64_t>());
  std::cout << fmt::format("  micro-F1 {:.4f}   weighted-F1 {:.4f}   MCC {:.4f}   ECE {:.4f}{}\n",
                           m["micro_f1"].get<double>(), m["weighted_f1"].get<double>(),
                           m["mcc"].get<double>(), m["ece"].get<double>(),
                           m["labels"].size() == 2 ? "   ROC-AUC " + number(m["roc_auc"]) : "");
  std::size_t width = 5;
  for (const auto& c : m["per_class"])
    width = std::max(width, terminal_text(c["label"].get<std::string>()).size());
  std::cout << fmt::format("  {:<{}}  precision  recall  f1      support\n", "label", width);
  for (const auto& c : m["per_class"])
    std::cout << fmt::format("  {:<{}}  {:9.4f}  {:6.4f}  {:6.4f}  {:7}\n",
                             terminal_text(c["label"].get<std::string>()), width,
                             c["precision"].get<double>(), c["recall"].get<double>(),
                             c["f1"].get<double>(), c["support"].get<std::int64_t>());
  std::cout << "  confusion (rows: true label, columns: predicted)\n";
  std::cout << fmt::format("  {:<{}}", "", width);
  for (const auto& l : m["labels"])
    std::cout << fmt::format("  {:>{}}", terminal_text(l.get<std::string>()), 8);
  std::cout << '\n';
  for (std::size_t i = 0; i < m["labels"].size(); ++i) {
    std::cout << fmt::format("  {:<{}}", terminal_text(m["labels"][i].get<std::string>()), width);
    for (const auto& n : m["confusion"][i])
      std::cout << fmt::format("  {:>8}", n.get<std::int64_t>());
    std::cout << '\n';
  }
}

void print_regression(const nlohmann::json& m) {
  std::cout << fmt::format("  RMSE {:.4f}   MAE {:.4f}   Pearson {}   Spearman {}   ({} rows)\n",
                           m["rmse"].get<double>(), m["mae"].get<double>(), number(m["pearson"]),
                           number(m["spearman"]), m["rows"].get<std::int64_t>());
  if (m["per_output"].size() < 2) return;
  for (const auto& o : m["per_output"])
    std::cout << fmt::format("  {:<12}  RMSE {:.4f}   MAE {:.4f}   Pearson {}   Spearman {}\n",
                             o["label"].get<std::string>(), o["rmse"].get<double>(),
                             o["mae"].get<double>(), number(o["pearson"]), number(o["spearman"]));
}

void print_per_label(const nlohmann::json& rows, const char* key) {
  std::size_t width = 5;
  for (const auto& c : rows) width = std::max(width, c[key].get<std::string>().size());
  std::cout << fmt::format("  {:<{}}  precision  recall  f1      support\n", key, width);
  for (const auto& c : rows)
    std::cout << fmt::format("  {:<{}}  {:9.4f}  {:6.4f}  {:6.4f}  {:7}\n",
                             c[key].get<std::string>(), width, c["precision"].get<double>(),
                             c["recall"].get<double>(), c["f1"].get<double>(),
                             c["support"].get<std::int64_t>());
}

void print_multi_label(const nlohmann::json& m) {
  std::cout << fmt::format(
      "  micro-F1 {:.4f}   macro-F1 {:.4f}   subset accuracy {:.4f}   Hamming loss {:.4f}   "
      "(threshold {:g}, {} rows)\n",
      m["micro_f1"].get<double>(), m["macro_f1"].get<double>(), m["subset_accuracy"].get<double>(),
      m["hamming_loss"].get<double>(), m["threshold"].get<double>(), m["rows"].get<std::int64_t>());
  print_per_label(m["per_label"], "label");
}

void print_token_classifier(const nlohmann::json& m) {
  std::cout << fmt::format(
      "  entity F1 {:.4f}   precision {:.4f}   recall {:.4f}   word accuracy {:.4f}   ({} "
      "sentences, {} words)\n",
      m["f1"].get<double>(), m["precision"].get<double>(), m["recall"].get<double>(),
      m["accuracy"].get<double>(), m["rows"].get<std::int64_t>(), m["words"].get<std::int64_t>());
  print_per_label(m["per_type"], "type");
}

void print_head(const nlohmann::json& m) {
  const std::string task = m.value("task", "classification");
  if (task == "regression") return print_regression(m);
  if (task == "multi_label") return print_multi_label(m);
  if (task == "token_classification") return print_token_classifier(m);
  print_classifier(m);
}

// "classification head", "regression head", ..., "language model": what the result scores.
std::string evaluated_what(const workbench::ModelEvaluation& r) {
  if (r.kind != workbench::ModelKind::kClassifier) return workbench::kind_name(r.kind);
  std::string task = r.metrics.value("task", "classification");
  std::replace(task.begin(), task.end(), '_', '-');
  return task + " head";
}

void print_language_model(const nlohmann::json& m) {
  std::cout << fmt::format("  {} {:.4f}   mean NLL {:.4f} nats/token   ({} tokens, {} rows)\n",
                           m["pseudo"].get<bool>() ? "pseudo-perplexity" : "perplexity",
                           m["perplexity"].get<double>(), m["mean_nll"].get<double>(),
                           m["tokens"].get<std::int64_t>(), m["rows"].get<std::int64_t>());
}

int eval(const GlobalOptions& global, const EvalOptions& options) {
  auto ws = load_workspace_or_report(global);
  if (!ws) return kExitUsage;
  for (const std::string& name : options.models)  // a misspelt name before any store work
    if (auto ref = workbench::parse_model_ref(name); !ref)
      return fail(ref.status());
    else if (auto found = workbench::find_spec_model(*ws, ref->model); !found)
      return fail(found.status());
  // Under mpirun every rank scores a share of the examples; rank 0 alone computes the
  // metrics, records and prints (docs/distributed.md).
  auto context = open_command_context(
      global, *ws, options.record ? workbench::StoreAccess::kWrite : workbench::StoreAccess::kRead);
  if (!context) return fail(context.status());
  runtime::Communicator& comm = (*context)->comm();
  lineage::LineageStore& store = (*context)->store();
  // One pass per version the models are named at (workbench/version_rounds.h).
  auto rounds = workbench::version_rounds(*ws, store, options.models);
  if (!rounds) return fail(rounds.status());
  // A file's rows are read with every round's head labels, as their one task needs.
  std::vector<std::string> labels;
  std::optional<spec::LabelType> label_type;
  for (const workbench::VersionRound& round : *rounds) {
    for (const std::string& label : workbench::head_labels(round.workspace, round.models))
      if (std::find(labels.begin(), labels.end(), label) == labels.end()) labels.push_back(label);
    auto type = workbench::eval_label_type(round.workspace, round.models);
    if (!type) return fail(type.status());
    if (label_type && *type && *label_type != **type)
      return fail(invalid_argument(
          "the models' heads are of different tasks, and a file's labels are read one way; "
          "evaluate them with separate `scion eval` commands"));
    if (*type) label_type = *type;
  }
  auto data = workbench::eval_data(*ws, options.data, labels,
                                   label_type.value_or(spec::LabelType::kSingle), options.fields);
  if (!data) return fail(data.status());

  auto backend = (*context)->backend();
  if (!backend) return fail(backend.status());
  std::vector<workbench::ModelEvaluation> all;
  std::vector<std::string> named;  // each result's model as named on the command line
  for (const workbench::VersionRound& round : *rounds) {
    workbench::StoredFamily family(round.workspace, store, **backend);
    const Status loaded = family.load(round.models);
    auto results = workbench::evaluate_on_data(round.workspace, family, **backend, round.models,
                                               *data, options.chunk_size, &comm, loaded);
    if (!results) return fail(results.status());
    for (workbench::ModelEvaluation& r : *results) {
      named.push_back(round.labels.at(r.model));
      all.push_back(std::move(r));
    }
  }
  // In the order named, whichever round each ran in.
  std::vector<std::size_t> order(all.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  const auto named_at = [&](std::size_t i) {
    return std::find(options.models.begin(), options.models.end(), named[i]) -
           options.models.begin();
  };
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return named_at(a) < named_at(b); });
  std::vector<workbench::ModelEvaluation> sorted;
  std::vector<std::string> sorted_names;
  for (std::size_t i : order) {
    sorted.push_back(std::move(all[i]));
    sorted_names.push_back(named[i]);
  }
  named = std::move(sorted_names);
  const std::vector<workbench::ModelEvaluation>* results = &sorted;
  if (Status s = (*context)->check_backends("scion eval"); !s.is_ok()) return fail(s);
  if (comm.rank() != 0) return kExitOk;  // its share is with rank 0, which reports

  if (options.record)
    if (Status s = workbench::record_evaluations(store, *data, *results); !s.is_ok())
      return fail(s);

  if (global.json) {
    nlohmann::json doc = {{"data",
                           {{"name", data->name},
                            {"path", data->dataset.path.string()},
                            {"digest", data->digest},
                            {"rows", data->examples.rows()}}},
                          {"recorded", options.record},
                          {"results", nlohmann::json::array()}};
    for (const workbench::ModelEvaluation& r : *results)
      doc["results"].push_back({{"model", r.model},
                                {"model_version", r.model_version},
                                {"kind", workbench::kind_name(r.kind)},
                                {"metrics", r.metrics}});
    print_json(doc);
    return kExitOk;
  }
  const bool tty = stdout_is_tty();
  std::cout << fmt::format("data {} ({} rows, sha256 {})\n", data->name, data->examples.rows(),
                           data->digest.substr(0, 16));
  for (std::size_t i = 0; i < results->size(); ++i) {
    const workbench::ModelEvaluation& r = (*results)[i];
    std::cout << '\n'
              << paint(named[i], Color::kBold, tty) << "  [" << evaluated_what(r) << ", version "
              << r.model_version.substr(0, 12) << "]\n";
    if (r.kind == workbench::ModelKind::kClassifier)
      print_head(r.metrics);
    else
      print_language_model(r.metrics);
  }
  if (options.record) std::cout << "\nrecorded in the lineage store (scion lineage show MODEL)\n";
  return kExitOk;
}

}  // namespace

void add_eval_command(CLI::App& app, const GlobalOptions& global, CommandAction& action) {
  static EvalOptions options;
  CLI::App* cmd = app.add_subcommand(
      "eval", "Score trained models on a dataset (accuracy, F1, RMSE, perplexity)");
  cmd->add_option("MODEL", options.models,
                  "The models (one shared-trunk pass; MODEL@N or MODEL@<hash>: a stored version)")
      ->required();
  cmd->add_option("--data", options.data, "A dataset of the spec, or a .jsonl/.csv/.tsv/.txt file")
      ->required()
      ->option_text("NAME|FILE");
  cmd->add_option("--text-field", options.fields.text,
                  "The field (column) holding the text (default: the dataset's, a file's `text`)")
      ->option_text("NAME");
  cmd->add_option("--pair-field", options.fields.pair,
                  "The field holding a sentence pair's second text (default: the dataset's; a "
                  "file's: none)")
      ->option_text("NAME");
  cmd->add_option("--label-field", options.fields.label,
                  "The field holding the labels (default: the dataset's, a file's `label`)")
      ->option_text("NAME");
  cmd->add_option("--chunk-size", options.chunk_size, "Texts per forward pass (default 64)")
      ->check(whole_number(1, 65536));
  cmd->add_flag("!--no-record", options.record,
                "Do not record the results in the lineage store (opens it read-only)");
  cmd->footer(
      "Classifiers: accuracy, macro/micro/weighted F1, MCC, calibration error (ECE),\n"
      "ROC-AUC (two classes), per-class precision/recall/F1 and the confusion matrix;\n"
      "regression: RMSE, MAE, Pearson, Spearman; multi-label: micro/macro F1, subset\n"
      "accuracy, Hamming loss; token classification: entity precision/recall/F1 (seqeval)\n"
      "and word accuracy; language models: perplexity (pseudo-perplexity for a masked LM).\n"
      "A file's rows are read as the spec reads a dataset (fields text and label unless\n"
      "--text-field/--label-field say otherwise), labels of the type the heads' task needs.\n"
      "Example: scion -C examples/minilm eval head lora prefix --data critics\n"
      "         scion eval lora --data held-out.csv --text-field review --label-field stars\n"
      "         scion eval nli --data dev.jsonl --text-field premise --pair-field hypothesis");
  cmd->callback([&global, &action] { action = [&global] { return eval(global, options); }; });
}

}  // namespace scion::cli
