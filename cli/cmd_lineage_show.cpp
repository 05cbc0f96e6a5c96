// `scion lineage show MODEL` and `scion lineage diff A B`: options and printing of
// workbench::show_model and workbench::diff_models (workbench/lineage_views.h).
#include <fmt/format.h>

#include <iomanip>
#include <iostream>
#include <map>
#include <set>

#include "cli/cmd_lineage_support.h"
#include "cli/command_context.h"
#include "cli/exit_codes.h"
#include "cli/output.h"
#include "lineage/spec_records.h"
#include "spec/spec_json.h"
#include "workbench/lineage_views.h"

namespace scion::cli {

namespace {

using nlohmann::json;

// A value written as YAML flow, as the spec writes it: {type: adamw, betas: [0.9, 0.999]}.
std::string flow(const json& value) {
  std::string out;
  if (value.is_object() || value.is_array()) {
    for (const auto& [key, child] : value.items())
      out += (out.empty() ? "" : ", ") + (value.is_object() ? key + ": " : "") + flow(child);
    return value.is_object() ? "{" + out + "}" : "[" + out + "]";
  }
  if (!value.is_string()) return value.dump();
  const std::string& text = value.get_ref<const std::string&>();
  const bool plain = !text.empty() && json::parse(text, nullptr, false).is_discarded() &&
                     text.find_first_not_of(
                         "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                         "0123456789_./-") == std::string::npos;
  return plain ? text : value.dump();
}

// One step of the ancestry as JSON.
json step_json(const workbench::AncestryStep& step) {
  json data = json::array();
  for (const auto& d : step.datasets)
    data.push_back(
        {{"path", d.path}, {"digest", d.digest}, {"rows", d.rows}, {"format", d.format}});
  json out = stored_model_to_json(step.model);
  out["adaptation"] = spec::in_spec_words(step.model.adaptation, "adapt");  // floats as written
  out["method"] = lineage::method_label(step.model.adaptation);
  out["datasets"] = data;
  out["recipe_run"] = step.recipe_run ? json(*step.recipe_run) : json();
  out["training"] = step.training;
  return out;
}

json show_json(const workbench::ModelShow& show) {
  json doc = {{"model", show.model},
              {"version", show.version.empty() ? json() : json(show.version)},
              {"current", show.current},
              {"ancestry", json::array()}};
  for (const workbench::AncestryStep& step : show.ancestry)
    doc["ancestry"].push_back(step_json(step));
  auto runs_json = [](const std::vector<workbench::RunWithValidation>& runs) {
    json out = json::array();
    for (const workbench::RunWithValidation& r : runs) {
      json run = run_to_json(r.run);
      run["final_validation"] =
          r.final_validation.empty() ? json::object() : json(r.final_validation);
      out.push_back(run);
    }
    return out;
  };
  doc["runs"] = runs_json(show.runs);
  doc["test_runs"] = runs_json(show.test_runs);
  doc["shares"] = show.shares;
  doc["evaluations"] = json::array();
  for (const lineage::EvalResult& e : show.evaluations)
    doc["evaluations"].push_back({{"dataset", e.dataset},
                                  {"dataset_digest", e.dataset_digest},
                                  {"rows", e.rows},
                                  {"kind", e.kind},
                                  {"model_version", e.model_version},
                                  {"current", show.recipe_hash == e.model_version},
                                  {"evaluated_at", e.evaluated_at},
                                  {"scion_version", e.scion_version},
                                  {"metrics", e.metrics}});
  return doc;
}

void print_runs(const std::string& title, const json& runs) {
  std::cout << '\n' << title << ":\n";
  for (const auto& r : runs) {
    std::cout << "  #" << r["run"] << "  " << r["kind"].get<std::string>() << "  "
              << r["status"].get<std::string>() << "  " << r["started_at"].get<std::string>()
              << "  " << human_duration(r["duration_s"].get<double>()) << "  " << r["steps"]
              << " steps";
    if (!r["final_loss"].is_null())
      std::cout << "  final loss " << std::fixed << std::setprecision(4)
                << r["final_loss"].get<double>();
    if (!r["final_validation"].empty()) std::cout << "  " << r["final_validation"].dump();
    if (!r["message"].get<std::string>().empty())
      std::cout << "  (" << r["message"].get<std::string>() << ")";
    std::cout << '\n';
  }
  if (runs.empty()) std::cout << "  none\n";
}

// `scion eval` results, newest first: the headline metric of each, and whether it
// scored the parameters stored now.
void print_evaluations(const json& evaluations) {
  std::cout << "\nevaluations (newest first):\n";
  for (const auto& e : evaluations) {
    const json& m = e["metrics"];
    std::cout << "  " << e["evaluated_at"].get<std::string>() << "  "
              << e["dataset"].get<std::string>() << " (" << e["rows"] << " rows)  " << std::fixed
              << std::setprecision(4);
    const std::string task = m.value("task", "classification");
    const auto number = [&](const char* key) {
      return m.contains(key) && m[key].is_number() ? fmt::format("{:.4f}", m[key].get<double>())
                                                   : std::string("n/a");
    };
    if (e["kind"] == "classifier" && task == "regression")
      std::cout << "RMSE " << number("rmse") << "  Spearman " << number("spearman");
    else if (e["kind"] == "classifier" && task == "multi_label")
      std::cout << "micro-F1 " << number("micro_f1") << "  macro-F1 " << number("macro_f1");
    else if (e["kind"] == "classifier" && task == "token_classification")
      std::cout << "entity F1 " << number("f1") << "  word accuracy " << number("accuracy");
    else if (e["kind"] == "classifier")
      std::cout << "accuracy " << m["accuracy"].get<double>() << "  macro-F1 "
                << m["macro_f1"].get<double>();
    else
      std::cout << (m["pseudo"].get<bool>() ? "pseudo-perplexity " : "perplexity ")
                << m["perplexity"].get<double>();
    std::cout << "  version " << e["model_version"].get<std::string>().substr(0, 12)
              << (e["current"].get<bool>() ? "" : " (another version)") << '\n';
  }
  if (evaluations.empty()) std::cout << "  none (scion eval MODEL --data NAME)\n";
}

void print_show(const json& doc, bool tty) {
  std::cout << paint("model " + (doc["version"].is_null() ? doc["model"] : doc["version"])
                                    .get<std::string>(),
                     Color::kBold, tty)
            << (doc["current"].get<bool>() ? ""
                                           : "  (an older version; `scion lineage versions " +
                                                 doc["model"].get<std::string>() + "` lists them)")
            << '\n';
  std::cout << "ancestry:";
  for (const auto& step : doc["ancestry"])
    std::cout << (step == doc["ancestry"][0] ? " " : " <- ") << step["model"].get<std::string>();
  std::cout << "\n\n";
  for (const auto& step : doc["ancestry"]) {
    std::cout << paint(step["model"].get<std::string>(), Color::kBold, tty) << "  ["
              << step["method"].get<std::string>() << "]\n";
    std::cout << "  recipe      "
              << (step["recipe_hash"].is_null() ? "(no parameters stored)"
                                                : step["recipe_hash"].get<std::string>())
              << '\n';
    if (!step["adaptation"].empty())
      std::cout << "  adaptation  " << flow(step["adaptation"]) << '\n';
    if (!step["recipe_run"].is_null())
      std::cout << "  made by     run #" << step["recipe_run"] << '\n';
    if (!step["training"].empty()) std::cout << "  training    " << flow(step["training"]) << '\n';
    for (const auto& d : step["datasets"]) {
      std::cout << "  data        " << d["path"].get<std::string>() << "  sha256 "
                << d["digest"].get<std::string>().substr(0, 16) << "  " << d["rows"] << " rows\n";
    }
    std::cout << "  parameters  " << step["parameters"] << " tensors, " << step["own_parameters"]
              << " own\n";
  }
  print_runs("runs (newest first)", doc["runs"]);
  print_runs("test runs (newest first)", doc["test_runs"]);
  print_evaluations(doc["evaluations"]);
  std::cout << "\nshares tensors with:\n";
  for (const auto& [other, count] : doc["shares"].items())
    std::cout << "  " << other << ": " << count << " tensors\n";
  if (doc["shares"].empty()) std::cout << "  no other model\n";
}

}  // namespace

int run_lineage_show(const GlobalOptions& global, const std::string& model) {
  auto context = open_store_context(global, workbench::StoreAccess::kRead);
  if (!context.is_ok()) return fail(context.status());
  lineage::LineageStore& store = (*context)->store();
  auto show = workbench::show_model(store, model);
  if (!show.is_ok()) return fail(show.status());
  const json doc = show_json(*show);
  if (global.json) {
    print_json(doc);
  } else {
    print_show(doc, stdout_is_tty());
  }
  return kExitOk;
}

int run_lineage_diff(const GlobalOptions& global, const std::string& a, const std::string& b) {
  auto context = open_store_context(global, workbench::StoreAccess::kRead);
  if (!context.is_ok()) return fail(context.status());
  lineage::LineageStore& store = (*context)->store();
  auto diff = workbench::diff_models(store, a, b);
  if (!diff.is_ok()) return fail(diff.status());
  const json shared = diff->shared, differ = diff->differ, only_a = diff->only_in_a,
             only_b = diff->only_in_b;
  json recipe = json::array();
  for (const workbench::RecipeDifference& d : diff->recipe)
    recipe.push_back({{"field", d.field}, {"a", d.a}, {"b", d.b}});

  if (global.json) {
    print_json({{"models", json::array({a, b})},
                {"shared", shared},
                {"differ", differ},
                {"only_in_a", only_a},
                {"only_in_b", only_b},
                {"recipe", recipe}});
    return kExitOk;
  }
  const bool tty = stdout_is_tty();
  std::cout << paint("parameters", Color::kBold, tty) << ": " << shared.size() << " shared, "
            << differ.size() << " differ, " << only_a.size() << " only in " << a << ", "
            << only_b.size() << " only in " << b << '\n';
  const bool all = global.verbosity > 0;
  auto list = [&](const char* label, const json& names) {
    std::size_t shown = 0;
    for (const auto& n : names) {
      if (!all && shown++ == 20) {
        std::cout << "  " << label << " ... " << names.size() - 20 << " more (-v lists all)\n";
        break;
      }
      std::cout << "  " << label << " " << n.get<std::string>() << '\n';
    }
  };
  list("~", differ);
  list("-", only_a);
  list("+", only_b);
  if (all) list("=", shared);
  std::cout << paint("recipe", Color::kBold, tty) << ": " << recipe.size() << " field(s) differ\n";
  for (const auto& r : recipe) {
    std::cout << "  " << r["field"].get<std::string>() << ": " << flow(r["a"]) << " -> "
              << flow(r["b"]) << '\n';
  }
  return kExitOk;
}

}  // namespace scion::cli
