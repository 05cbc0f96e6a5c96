// `scion lineage show MODEL` and `scion lineage diff A B`.
#include <iomanip>
#include <iostream>
#include <map>
#include <set>

#include "cli/cmd_lineage_support.h"
#include "cli/exit_codes.h"
#include "cli/output.h"
#include "lineage/spec_records.h"
#include "workbench/model_lookup.h"

namespace scion::cli {

namespace {

using nlohmann::json;

// The run that made the model's stored parameters: the newest finished train, adapt or
// import run of its current recipe. Test runs finish too, but record no recipe.
std::optional<lineage::RunRecord> recipe_run(const std::vector<lineage::RunRecord>& runs,
                                             const lineage::StoredModel& m) {
  if (!m.recipe_hash) return std::nullopt;
  for (const auto& r : runs) {  // newest first
    if (r.status == lineage::RunStatus::kFinished && r.kind != lineage::RunKind::kTest &&
        r.recipe_hash == *m.recipe_hash)
      return r;
  }
  return std::nullopt;
}

// What that run recorded, in the spec's words: a trained model's `train` section, an
// imported one's source file.
json training_of(const std::optional<lineage::RunRecord>& run) {
  if (!run) return json::object();
  json recipe = lineage::recipe_in_spec_words(run->hyperparameters);
  return recipe.contains("train") ? recipe["train"] : recipe;
}

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

// One step of the ancestry: what the store knows about a model's recipe.
Result<json> step_json(lineage::LineageStore& store, const lineage::StoredModel& m) {
  auto runs = store.runs(m.name, 0);
  if (!runs.is_ok()) return runs.status();
  auto datasets = store.datasets_of(m.name);
  if (!datasets.is_ok()) return datasets.status();
  json data = json::array();
  for (const auto& d : *datasets) {
    data.push_back(
        {{"path", d.path}, {"digest", d.digest}, {"rows", d.rows}, {"format", d.format}});
  }
  json step = stored_model_to_json(m);
  step["adaptation"] = lineage::recipe_in_spec_words(m.adaptation);  // floats as written
  step["method"] = lineage::method_label(m.adaptation);
  step["datasets"] = data;
  auto made_by = recipe_run(*runs, m);
  step["recipe_run"] = made_by ? json(made_by->id) : json();
  step["training"] = training_of(made_by);
  return step;
}

void print_runs(const std::string& title, const json& runs) {
  std::cout << '\n' << title << ":\n";
  for (const auto& r : runs) {
    std::cout << "  #" << r["id"] << "  " << r["kind"].get<std::string>() << "  "
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

void print_show(const json& doc, bool tty) {
  std::cout << paint("model " + doc["model"].get<std::string>(), Color::kBold, tty) << '\n';
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
  std::cout << "\nshares tensors with:\n";
  for (const auto& [other, count] : doc["shares"].items())
    std::cout << "  " << other << ": " << count << " tensors\n";
  if (doc["shares"].empty()) std::cout << "  no other model\n";
}

}  // namespace

int run_lineage_show(const GlobalOptions& global, const std::string& model) {
  auto store = open_store_read_only(global);
  if (!store.is_ok()) return fail(store.status());
  if (auto found = workbench::find_stored_model(**store, model); !found.is_ok())
    return fail(found.status());
  auto models = (*store)->models();
  if (!models.is_ok()) return fail(models.status());
  std::map<std::string, const lineage::StoredModel*> by_name;
  for (const auto& m : *models) by_name[m.name] = &m;
  json doc = {{"model", model}, {"ancestry", json::array()}};
  for (const lineage::StoredModel* m = by_name[model]; m != nullptr;
       m = m->parent.empty() ? nullptr : by_name[m->parent]) {
    auto step = step_json(**store, *m);
    if (!step.is_ok()) return fail(step.status());
    doc["ancestry"].push_back(*step);
  }
  auto runs = (*store)->runs(model, 0);
  if (!runs.is_ok()) return fail(runs.status());
  doc["runs"] = json::array();
  doc["test_runs"] = json::array();
  for (const auto& r : *runs) {
    json run = run_to_json(r);
    auto metrics = (*store)->run_metrics(r.id);
    if (!metrics.is_ok()) return fail(metrics.status());
    run["final_validation"] = json::object();
    for (auto it = metrics->rbegin(); it != metrics->rend(); ++it) {
      if (it->validation.empty()) continue;
      run["final_validation"] = it->validation;
      break;
    }
    doc[r.kind == lineage::RunKind::kTest ? "test_runs" : "runs"].push_back(run);
  }
  auto shares = (*store)->sharing(model);
  if (!shares.is_ok()) return fail(shares.status());
  doc["shares"] = *shares;
  if (global.json) {
    print_json(doc);
  } else {
    print_show(doc, stdout_is_tty());
  }
  return kExitOk;
}

namespace {

// Leaves of a JSON value as "a.b.c" -> value, for field-by-field comparison.
void flatten(const json& value, const std::string& path, std::map<std::string, json>& out) {
  if (value.is_object() && !value.empty()) {
    for (const auto& [key, child] : value.items())
      flatten(child, path.empty() ? key : path + "." + key, out);
  } else {
    out[path] = value;
  }
}

Result<std::map<std::string, json>> recipe_fields(lineage::LineageStore& store,
                                                  const lineage::StoredModel& m) {
  auto runs = store.runs(m.name, 0);
  if (!runs.is_ok()) return runs.status();
  json recipe = {{"parent", m.parent},
                 {"recipe_hash", m.recipe_hash ? json(*m.recipe_hash) : json()},
                 {"adaptation", lineage::recipe_in_spec_words(m.adaptation)},
                 {"architecture", m.architecture},
                 {"training", training_of(recipe_run(*runs, m))}};
  std::map<std::string, json> out;
  flatten(recipe, "", out);
  return out;
}

}  // namespace

int run_lineage_diff(const GlobalOptions& global, const std::string& a, const std::string& b) {
  auto store = open_store_read_only(global);
  if (!store.is_ok()) return fail(store.status());
  auto model_a = workbench::find_stored_model(**store, a);
  if (!model_a.is_ok()) return fail(model_a.status());
  auto model_b = workbench::find_stored_model(**store, b);
  if (!model_b.is_ok()) return fail(model_b.status());
  auto params_a = (*store)->parameters(a);
  auto params_b = (*store)->parameters(b);
  if (!params_a.is_ok()) return fail(params_a.status());
  if (!params_b.is_ok()) return fail(params_b.status());
  std::map<std::string, const lineage::StoredParameter*> in_b;
  for (const auto& p : *params_b) in_b[p.name] = &p;
  json shared = json::array(), differ = json::array(), only_a = json::array(),
       only_b = json::array();
  for (const auto& p : *params_a) {
    auto it = in_b.find(p.name);
    if (it == in_b.end()) {
      only_a.push_back(p.name);
    } else {
      (it->second->digest == p.digest ? shared : differ).push_back(p.name);
      in_b.erase(it);
    }
  }
  for (const auto& [name, p] : in_b) only_b.push_back(name);

  auto fields_a = recipe_fields(**store, *model_a);
  auto fields_b = recipe_fields(**store, *model_b);
  if (!fields_a.is_ok()) return fail(fields_a.status());
  if (!fields_b.is_ok()) return fail(fields_b.status());
  json recipe = json::array();
  std::set<std::string> keys;
  for (const auto& [k, v] : *fields_a) keys.insert(k);
  for (const auto& [k, v] : *fields_b) keys.insert(k);
  for (const std::string& k : keys) {
    json va = fields_a->count(k) ? fields_a->at(k) : json();
    json vb = fields_b->count(k) ? fields_b->at(k) : json();
    if (va != vb) recipe.push_back({{"field", k}, {"a", va}, {"b", vb}});
  }

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
