// `scion predict MODEL... --text T | --file F [--assert]`: stored models' labels and class
// probabilities for each text; with --assert, the spec's model assertions for each model
// are checked on every prediction and their violations printed. Several models answer in
// one evaluation through the shared trunk (the trie of layer applications: what their
// ancestry has in common is computed once), as `scion test` evaluates the family.
// The texts come from cli/predict_input.h (lines or JSONL, a file or standard input); a
// text longer than a model reads is classified by its first tokens, with a warning.
#include <fmt/format.h>

#include <algorithm>
#include <iostream>
#include <map>
#include <set>

#include "cli/cmd_lineage_support.h"
#include "cli/commands.h"
#include "cli/exit_codes.h"
#include "cli/output.h"
#include "cli/predict_input.h"
#include "runtime/compute_device.h"
#include "workbench/behaviour_suite.h"
#include "workbench/checked_workspace.h"

namespace scion::cli {
namespace {

struct PredictOptions {
  std::vector<std::string> models;
  PredictInputOptions input;
  bool check_assertions = false;
  int chunk_size = 64;
};

struct Flag {
  std::string assertion;
  double severity;
  std::string perturbed;
};

// One model to predict with: its assertions to check and the parent some of them compare
// with.
struct Predictor {
  const spec::Model* model = nullptr;
  const spec::Model* parent = nullptr;  // the parent, when it is a classifier
  std::vector<const assertions::ModelAssertion*> checks;
};

Result<Predictor> predictor_for(const spec::Workspace& ws, const std::string& name,
                                const workbench::BehaviourSuite& suite, bool check_assertions) {
  auto found = workbench::find_classifier_model(
      ws, name, " (it is a language model); predict one of its descendants");
  if (!found) return found.status();
  Predictor p{.model = *found};
  if (!p.model->is_base() && workbench::classifier_labels(ws, *ws.find_model(p.model->from)))
    p.parent = ws.find_model(p.model->from);
  if (!check_assertions) return p;
  for (const assertions::ModelAssertion& a : suite.assertions) {
    if (!workbench::covers(a.models(), p.model->name) ||
        workbench::kind_of(a) != workbench::ModelKind::kClassifier)
      continue;
    if (a.needs_parent() && !p.parent) {
      print_note("assertion '" + a.name() + "' skipped for '" + p.model->name +
                 "': it compares with the parent, which has no classifier head");
      continue;
    }
    p.checks.push_back(&a);
  }
  return p;
}

// The assertions `p` violates on `text`.
Result<std::vector<Flag>> check_prediction(const Predictor& p, const std::string& text,
                                           const workbench::FamilyOutputs& outputs) {
  std::vector<Flag> flags;
  for (const assertions::ModelAssertion* a : p.checks) {
    assertions::AssertionInput input{.text = text, .output = &outputs.at(p.model->name, text)};
    if (a->needs_parent()) input.parent = &outputs.at(p.parent->name, text);
    std::string perturbed;
    if (const assertions::Perturbation* perturbation = a->perturbation()) {
      auto changed = perturbation->apply(text, 0);
      if (!changed) continue;
      perturbed = *changed;
      input.perturbed = &outputs.at(p.model->name, perturbed);
    }
    auto severity = a->severity(input);
    if (!severity) return severity.status();
    if (*severity > 0) flags.push_back({a->name(), *severity, perturbed});
  }
  return flags;
}

nlohmann::json prediction_json(const std::string& model, const std::string& text,
                               const assertions::ModelOutput& o, const std::vector<Flag>* flags) {
  nlohmann::json probabilities = nlohmann::json::object();
  for (std::size_t k = 0; k < o.labels.size(); ++k) probabilities[o.labels[k]] = o.probabilities[k];
  nlohmann::json p = {{"model", model},
                      {"text", text},
                      {"label", assertions::predicted_label(o)},
                      {"confidence", assertions::confidence(o)},
                      {"probabilities", probabilities}};
  if (flags) {
    nlohmann::json v = nlohmann::json::array();
    for (const Flag& f : *flags) {
      nlohmann::json item = {{"assertion", f.assertion}, {"severity", f.severity}};
      if (!f.perturbed.empty()) item["perturbed"] = f.perturbed;
      v.push_back(item);
    }
    p["violations"] = v;
  }
  return p;
}

// "<lead>positive  (negative 0.081, positive 0.919)<tail>", and below it each violation,
// indented by `indent`.
void print_prediction(const std::string& lead, const std::string& tail, const std::string& indent,
                      const assertions::ModelOutput& o, const std::vector<Flag>& flags, bool tty) {
  std::vector<std::string> probabilities;
  for (std::size_t k = 0; k < o.labels.size(); ++k)
    probabilities.push_back(fmt::format("{} {:.3f}", o.labels[k], o.probabilities[k]));
  std::cout << lead << paint(assertions::predicted_label(o), Color::kBold, tty) << "  ("
            << fmt::format("{}", fmt::join(probabilities, ", ")) << ")" << tail << "\n";
  for (const Flag& f : flags)
    std::cout << indent << paint("violation", Color::kYellow, tty) << " " << f.assertion
              << fmt::format(" (severity {:.3f})", f.severity)
              << (f.perturbed.empty() ? "" : " on \"" + f.perturbed + "\"") << "\n";
}

// Warns about each text longer than a model reads: it is classified by its first tokens.
void warn_truncated(const workbench::StoredFamily& family, const std::vector<Predictor>& predictors,
                    const std::vector<PredictText>& texts) {
  for (const PredictText& t : texts) {
    std::size_t tokens = 0;
    std::vector<std::string> readers;
    for (const Predictor& p : predictors) {
      const runtime::EvaluatedModel& model = *family.classifier(p.model->name);
      tokens = model.tokenizer->encode(t.text).size();
      const std::size_t kept = runtime::text_capacity(model);
      if (tokens > kept)
        readers.push_back(fmt::format("'{}' reads its first {}", p.model->name, kept));
    }
    if (!readers.empty())
      print_warning(
          fmt::format("{} is {} tokens, longer than the model reads: {}; the rest is ignored",
                      t.origin, tokens, fmt::join(readers, ", ")));
  }
}

std::vector<std::string> names_of(const std::vector<Predictor>& predictors) {
  std::vector<std::string> names;
  for (const Predictor& p : predictors) names.push_back(p.model->name);
  return names;
}

// A probability that is NaN or infinite is no prediction: refuse to print any (exit 3)
// rather than show "-nan" as if it were an answer.
Status check_finite(const std::vector<Predictor>& predictors,
                    const std::vector<std::string>& inputs,
                    const workbench::FamilyOutputs& outputs) {
  for (const Predictor& p : predictors)
    for (const std::string& text : inputs)
      if (auto value = assertions::non_finite_value(outputs.at(p.model->name, text)))
        return Status(
            StatusCode::kDiverged,
            fmt::format("model '{}' gave {} for \"{}\": its stored parameters are not "
                        "finite (it diverged, or was imported with --allow-nonfinite); "
                        "retrain it with `scion run --force {}` and a lower learning rate",
                        p.model->name, *value, text, p.model->name));
  return Status::ok();
}

int predict(const GlobalOptions& global, const PredictOptions& options) {
  if (options.input.file == "-" && global.spec_file == workbench::kStdinSpec)
    return fail(invalid_argument(
        "-f - and --file - both read standard input; give one of them a file"));
  auto texts = read_predict_texts(options.input, std::cin);
  if (!texts) return fail(texts.status());
  std::vector<std::string> inputs;
  for (const PredictText& t : *texts) inputs.push_back(t.text);
  if (inputs.empty())
    return fail(invalid_argument("nothing to predict: give --text TEXT or --file FILE"));
  auto ws = load_workspace_or_report(global);
  if (!ws) return kExitUsage;
  auto store = open_store_read_only(global);
  if (!store) return fail(store.status());

  workbench::BehaviourSuite suite;
  if (options.check_assertions) {
    auto compiled = workbench::compile_suite(*ws);
    if (!compiled) return fail(compiled.status());
    suite = std::move(*compiled);
  }
  std::vector<Predictor> predictors;
  std::set<std::string> seen;
  for (const std::string& name : options.models) {
    if (!seen.insert(name).second) continue;  // a model named twice answers once
    auto p = predictor_for(*ws, name, suite, options.check_assertions);
    if (!p) return fail(p.status());
    predictors.push_back(std::move(*p));
  }
  std::vector<std::string> names = names_of(predictors);  // parents for assertions join
  workbench::EvaluationPlan plan;
  for (const std::string& t : inputs) plan.add_text(t);
  for (const Predictor& p : predictors)
    for (const assertions::ModelAssertion* a : p.checks) {
      if (a->needs_parent() && seen.insert(p.parent->name).second) names.push_back(p.parent->name);
      if (const assertions::Perturbation* perturbation = a->perturbation())
        for (const std::string& t : inputs)
          if (auto perturbed = perturbation->apply(t, 0)) plan.add_text(*perturbed);
    }

  auto made = runtime::make_backend(global.compute_device, runtime::Precision::kF32);
  if (!made) return fail(made.status());
  std::unique_ptr<runtime::Backend> backend = std::move(*made);
  workbench::StoredFamily family(*ws, **store, *backend);
  if (Status s = family.load(names); !s.is_ok()) return fail(s);
  if (global.verbosity >= 0) warn_truncated(family, predictors, *texts);
  auto outputs = workbench::evaluate_models(family, *backend, names, plan, options.chunk_size);
  if (!outputs) return fail(outputs.status());
  if (Status s = runtime::check_backend(*backend, "scion predict"); !s.is_ok()) return fail(s);

  if (Status sound = check_finite(predictors, inputs, *outputs); !sound.is_ok()) return fail(sound);

  nlohmann::json predictions = nlohmann::json::array();
  const bool tty = stdout_is_tty();
  const bool several = predictors.size() > 1;
  std::size_t width = 0;
  for (const Predictor& p : predictors) width = std::max(width, p.model->name.size());
  std::size_t violations = 0, checks = 0;
  for (const Predictor& p : predictors) checks += p.checks.size();
  for (const std::string& text : inputs) {
    // One model: a line per text. Several: the text, then a line per model.
    if (several && !global.json) std::cout << text << "\n";
    for (const Predictor& p : predictors) {
      const assertions::ModelOutput& o = outputs->at(p.model->name, text);
      auto flags = check_prediction(p, text, *outputs);
      if (!flags) return fail(flags.status());
      violations += flags->size();
      if (global.json)
        predictions.push_back(
            prediction_json(p.model->name, text, o, options.check_assertions ? &*flags : nullptr));
      else if (several)
        print_prediction(fmt::format("  {:<{}}  ", p.model->name, width), "",
                         std::string(width + 6, ' '), o, *flags, tty);
      else
        print_prediction("", "  " + text, "  ", o, *flags, tty);
    }
  }
  if (global.json) {
    print_json({{"models", names_of(predictors)}, {"predictions", predictions}});
  } else if (options.check_assertions) {
    std::cout << fmt::format("{} assertion violation{} ({} assertion{} checked)\n", violations,
                             violations == 1 ? "" : "s", checks, checks == 1 ? "" : "s");
  }
  return kExitOk;
}

}  // namespace

void add_predict_command(CLI::App& app, const GlobalOptions& global, CommandAction& action) {
  static PredictOptions options;
  CLI::App* cmd = app.add_subcommand("predict", "Labels and class probabilities of trained models");
  cmd->add_option("MODEL", options.models, "The models (several answer in one shared pass)")
      ->required();
  cmd->add_option("--text", options.input.texts, "A text to classify (repeatable)");
  cmd->add_option("--file", options.input.file,
                  "A file with one text per line, or JSONL records; - reads stdin")
      ->option_text("FILE");
  cmd->add_option("--format", options.input.format,
                  "lines | jsonl (default: jsonl for *.jsonl, else lines)")
      ->transform(CLI::CheckedTransformer(std::map<std::string, PredictFormat>{
          {"lines", PredictFormat::kLines}, {"jsonl", PredictFormat::kJsonl}}));
  cmd->add_option("--text-field", options.input.text_field,
                  "The JSONL field holding the text (default text)")
      ->option_text("NAME");
  cmd->add_flag("--assert", options.check_assertions,
                "Check the spec's model assertions on each prediction");
  cmd->add_option("--chunk-size", options.chunk_size, "Texts per forward pass (default 64)")
      ->check(CLI::Range(1, 65536));
  cmd->footer(
      "A text longer than a model reads is classified by its first tokens, with a warning;\n"
      "an empty text is an error (exit 2).\n"
      "Example: scion -C examples/sentiment predict review-lora --text \"a lovely film\" --assert\n"
      "         jq -c '{text: .review}' reviews.jsonl | scion predict review-lora --file - "
      "--format jsonl\n"
      "         scion -C examples/sentiment predict base review-lora product-lora --text \"the "
      "kettle was solid\"");
  cmd->callback([&global, &action] { action = [&global] { return predict(global, options); }; });
}

}  // namespace scion::cli
