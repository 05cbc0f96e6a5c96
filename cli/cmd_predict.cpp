// `scion predict MODEL --text T | --file F [--assert]`: a stored model's label and class
// probabilities for each text; with --assert, the spec's model assertions for that model
// are checked on every prediction and their violations printed.
#include <fmt/format.h>
#include <fstream>
#include <iostream>
#include <set>

#include "cli/behaviour_suite.h"
#include "cli/cmd_lineage_support.h"
#include "cli/commands.h"
#include "cli/exit_codes.h"
#include "cli/output.h"

namespace scion::cli {
namespace {

struct PredictOptions {
  std::string model;
  std::vector<std::string> texts;
  std::string file;
  bool check_assertions = false;
  int chunk_size = 64;
};

Result<std::vector<std::string>> read_lines(const std::string& path) {
  std::ifstream in(path);
  if (!in) return not_found("cannot read " + path + ": check the path (one text per line)");
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (!line.empty()) lines.push_back(line);
  }
  return lines;
}

struct Flag {
  std::string assertion;
  double severity;
  std::string perturbed;
};

int predict(const GlobalOptions& global, const PredictOptions& options) {
  std::vector<std::string> inputs = options.texts;
  if (!options.file.empty()) {
    auto lines = read_lines(options.file);
    if (!lines) return fail(lines.status());
    inputs.insert(inputs.end(), lines->begin(), lines->end());
  }
  if (inputs.empty()) return fail(invalid_argument("nothing to predict: give --text TEXT or --file FILE"));
  auto ws = load_workspace_or_report(global);
  if (!ws) return kExitUsage;
  auto found = find_classifier_model(*ws, options.model,
                                     " (it is a language model); predict one of its descendants");
  if (!found) return fail(found.status());
  const spec::Model* model = *found;
  auto store = open_store(global, /*create=*/false);
  if (!store) return fail(store.status());

  std::vector<const assertions::ModelAssertion*> checks;
  BehaviourSuite suite;
  const spec::Model* parent = nullptr;
  if (!model->is_base() && classifier_labels(*ws, *ws->find_model(model->from)))
    parent = ws->find_model(model->from);
  if (options.check_assertions) {
    auto compiled = compile_suite(*ws);
    if (!compiled) return fail(compiled.status());
    suite = std::move(*compiled);
    for (const assertions::ModelAssertion& a : suite.assertions) {
      if (!covers(a.models(), model->name) || kind_of(a) != ModelKind::kClassifier) continue;
      if (a.needs_parent() && !parent) {
        print_note("assertion '" + a.name() + "' skipped: it compares with the parent, which has no "
                   "classifier head");
        continue;
      }
      checks.push_back(&a);
    }
  }
  EvaluationPlan plan;
  std::vector<std::string> names = {model->name};
  for (const std::string& t : inputs) plan.add_text(t);
  for (const assertions::ModelAssertion* a : checks) {
    if (a->needs_parent() && names.size() == 1) names.push_back(parent->name);
    if (const assertions::Perturbation* p = a->perturbation())
      for (const std::string& t : inputs)
        if (auto perturbed = p->apply(t, 0)) plan.add_text(*perturbed);
  }

  auto backend = runtime::make_cpu_backend();
  StoredFamily family(*ws, **store, *backend);
  if (Status s = family.load(names); !s.is_ok()) return fail(s);
  auto outputs = evaluate_models(family, *backend, names, plan, options.chunk_size);
  if (!outputs) return fail(outputs.status());

  nlohmann::json predictions = nlohmann::json::array();
  const bool tty = stdout_is_tty();
  std::size_t violations = 0;
  for (const std::string& text : inputs) {
    const assertions::ModelOutput& o = outputs->at(model->name, text);
    std::vector<Flag> flags;
    for (const assertions::ModelAssertion* a : checks) {
      assertions::AssertionInput input{.text = text, .output = &o};
      if (a->needs_parent()) input.parent = &outputs->at(parent->name, text);
      std::string perturbed;
      if (const assertions::Perturbation* p = a->perturbation()) {
        auto changed = p->apply(text, 0);
        if (!changed) continue;
        perturbed = *changed;
        input.perturbed = &outputs->at(model->name, perturbed);
      }
      auto severity = a->severity(input);
      if (!severity) return fail(severity.status());
      if (*severity > 0) flags.push_back({a->name(), *severity, perturbed});
    }
    violations += flags.size();
    if (global.json) {
      nlohmann::json probabilities = nlohmann::json::object();
      for (std::size_t k = 0; k < o.labels.size(); ++k) probabilities[o.labels[k]] = o.probabilities[k];
      nlohmann::json p = {{"text", text}, {"label", assertions::predicted_label(o)},
                          {"confidence", assertions::confidence(o)}, {"probabilities", probabilities}};
      if (options.check_assertions) {
        nlohmann::json v = nlohmann::json::array();
        for (const Flag& f : flags) {
          nlohmann::json item = {{"assertion", f.assertion}, {"severity", f.severity}};
          if (!f.perturbed.empty()) item["perturbed"] = f.perturbed;
          v.push_back(item);
        }
        p["violations"] = v;
      }
      predictions.push_back(p);
      continue;
    }
    std::vector<std::string> probabilities;
    for (std::size_t k = 0; k < o.labels.size(); ++k)
      probabilities.push_back(fmt::format("{} {:.3f}", o.labels[k], o.probabilities[k]));
    std::cout << paint(assertions::predicted_label(o), Color::kBold, tty) << "  ("
              << fmt::format("{}", fmt::join(probabilities, ", ")) << ")  " << text << "\n";
    for (const Flag& f : flags)
      std::cout << "  " << paint("violation", Color::kYellow, tty) << " " << f.assertion
                << fmt::format(" (severity {:.3f})", f.severity)
                << (f.perturbed.empty() ? "" : " on \"" + f.perturbed + "\"") << "\n";
  }
  if (global.json) {
    print_json({{"model", model->name}, {"predictions", predictions}});
  } else if (options.check_assertions) {
    std::cout << fmt::format("{} assertion violation{} ({} assertion{} checked)\n", violations,
                             violations == 1 ? "" : "s", checks.size(), checks.size() == 1 ? "" : "s");
  }
  return kExitOk;
}

}  // namespace

void add_predict_command(CLI::App& app, const GlobalOptions& global, CommandAction& action) {
  static PredictOptions options;
  CLI::App* cmd = app.add_subcommand("predict", "Labels and class probabilities of a trained model");
  cmd->add_option("MODEL", options.model, "The model")->required();
  cmd->add_option("--text", options.texts, "A text to classify (repeatable)");
  cmd->add_option("--file", options.file, "A file with one text per line")->option_text("FILE");
  cmd->add_flag("--assert", options.check_assertions, "Check the spec's model assertions on each prediction");
  cmd->add_option("--chunk-size", options.chunk_size, "Texts per forward pass (default 64)")
      ->check(CLI::Range(1, 65536));
  cmd->footer("Example: scion -C examples/sentiment predict review-lora --text \"a lovely film\" --assert");
  cmd->callback([&global, &action] {
    action = [&global] { return predict(global, options); };
  });
}

}  // namespace scion::cli
