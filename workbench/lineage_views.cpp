#include "workbench/lineage_views.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <functional>
#include <set>

#include "lineage/spec_records.h"
#include "spec/spec_json.h"
#include "workbench/checkpoint_file.h"
#include "workbench/model_lookup.h"
#include "workbench/model_version.h"

namespace scion::workbench {

namespace {

bool is_training(lineage::RunKind kind) {
  return kind == lineage::RunKind::kTrain || kind == lineage::RunKind::kAdapt;
}

// "interrupted at step N, resumable" for a model whose newest training run was
// interrupted; `otherwise` when it was not.
// A node's words: its standing's name, or its interrupted training run where one says more.
std::string status_words(const FamilyNode& node) {
  const bool unfinished =
      node.standing == Standing::kNotTrained || node.standing == Standing::kOutOfDate;
  if (!unfinished || !node.history.interrupted_at) return std::string(standing_name(node.standing));
  return "interrupted at step " + std::to_string(*node.history.interrupted_at) +
         (node.history.resumable ? ", resumable" : "");
}

}  // namespace

std::string_view standing_name(Standing standing) {
  switch (standing) {
    case Standing::kTrained:
      return "trained";
    case Standing::kImported:
      return "imported";
    case Standing::kNotTrained:
      return "not trained";
    case Standing::kOutOfDate:
      return "out of date";
    case Standing::kNotInSpec:
      return "not in spec";
  }
  return "unknown";
}

Result<ModelHistory> model_history(lineage::LineageStore& store, const lineage::StoredModel& model,
                                   const std::string& recipe_hash) {
  auto runs = store.runs(model.name, 0);
  if (!runs.is_ok()) return runs.status();
  ModelHistory history;
  for (const lineage::RunRecord& run : *runs) {  // newest first
    if (model.recipe_hash && run.status == lineage::RunStatus::kFinished &&
        run.recipe_hash == *model.recipe_hash &&
        (is_training(run.kind) || run.kind == lineage::RunKind::kImport)) {
      history.imported = run.kind == lineage::RunKind::kImport;
      break;
    }
  }
  for (const lineage::RunRecord& run : *runs) {
    if (!is_training(run.kind) && run.kind != lineage::RunKind::kImport) continue;
    if (run.status == lineage::RunStatus::kInterrupted &&
        (recipe_hash.empty() || run.recipe_hash == recipe_hash)) {
      history.interrupted_at = run.steps;
      history.resumable = has_checkpoint(store.env(), store.dir(), run.recipe_hash);
    }
    break;  // only the newest training run tells
  }
  return history;
}

std::vector<FamilyNode> family(const std::vector<lineage::StoredModel>& stored,
                               const spec::Workspace* workspace,
                               const std::map<std::string, ModelHistory>& histories) {
  std::map<std::string, FamilyNode> nodes;
  for (const lineage::StoredModel& m : stored) {
    FamilyNode& node = nodes[m.name];
    node.name = m.name;
    node.parent = m.parent;
    node.method = lineage::method_label(m.adaptation);
    node.stored = m;
    if (auto it = histories.find(m.name); it != histories.end()) node.history = it->second;
    const Standing made = node.history.imported ? Standing::kImported : Standing::kTrained;
    node.standing = !m.recipe_hash ? Standing::kNotTrained
                    : workspace    ? Standing::kNotInSpec
                                   : made;
    node.status = status_words(node);
  }
  if (workspace != nullptr) {
    for (const spec::Model& m : workspace->models) {
      FamilyNode& node = nodes[m.name];
      node.name = m.name;
      node.parent = m.from;
      node.method = lineage::method_label(spec::adaptation_in_words(m.adaptation));
      if (!node.stored || !node.stored->recipe_hash) {
        node.standing = Standing::kNotTrained;
      } else if (*node.stored->recipe_hash == m.recipe_hash) {
        node.standing = node.history.imported ? Standing::kImported : Standing::kTrained;
      } else {
        node.standing = Standing::kOutOfDate;
      }
      node.status = status_words(node);
    }
  }
  std::vector<FamilyNode> ordered;
  std::function<void(const std::string&)> visit = [&](const std::string& parent) {
    for (auto& [name, node] : nodes) {
      if (node.parent == parent) {
        ordered.push_back(node);
        visit(name);
      }
    }
  };
  visit("");
  return ordered;
}

Result<std::vector<FamilyNode>> family_of(lineage::LineageStore* store,
                                          const spec::Workspace* workspace) {
  std::vector<lineage::StoredModel> stored;
  std::map<std::string, ModelHistory> histories;
  if (store) {
    auto models = store->models();
    if (!models.is_ok()) return models.status();
    stored = std::move(*models);
    for (const lineage::StoredModel& m : stored) {
      const spec::Model* in_spec = workspace ? workspace->find_model(m.name) : nullptr;
      auto history = model_history(*store, m, in_spec ? in_spec->recipe_hash : "");
      if (!history.is_ok()) return history.status();
      histories[m.name] = *history;
    }
  }
  return family(stored, workspace, histories);
}

Result<std::vector<FamilyNode>> subtree(const std::vector<FamilyNode>& nodes,
                                        const std::string& root) {
  if (root.empty()) return nodes;
  SCION_RETURN_IF_ERROR(check_model_name(root));
  std::set<std::string> inside{root};
  std::vector<FamilyNode> out;
  for (const FamilyNode& n : nodes) {  // parents come first, so one pass suffices
    if (n.name == root || inside.count(n.parent)) {
      inside.insert(n.name);
      out.push_back(n);
    }
  }
  if (out.empty()) {
    std::vector<std::string> known;
    for (const FamilyNode& n : nodes) known.push_back(n.name);
    return unknown_model(root, "the spec or the store", known);
  }
  return out;
}

std::optional<lineage::RunRecord> recipe_run(const std::vector<lineage::RunRecord>& runs,
                                             const lineage::StoredModel& m) {
  if (!m.recipe_hash) return std::nullopt;
  for (const auto& r : runs) {  // newest first; test and restore runs make no parameters
    if (r.status == lineage::RunStatus::kFinished &&
        (is_training(r.kind) || r.kind == lineage::RunKind::kImport) &&
        r.recipe_hash == *m.recipe_hash)
      return r;
  }
  return std::nullopt;
}

nlohmann::json training_recipe(const std::optional<lineage::RunRecord>& run) {
  if (!run) return nlohmann::json::object();
  nlohmann::json recipe = spec::in_spec_words(run->hyperparameters);
  return recipe.contains("train") ? recipe["train"] : recipe;
}

std::map<std::string, double> stored_validation(const lineage::RunRecord& run,
                                                const std::vector<lineage::StepMetrics>& steps) {
  const nlohmann::json& kept = run.hyperparameters.is_object()
                                   ? run.hyperparameters.value("kept", nlohmann::json())
                                   : nlohmann::json();
  if (kept.is_object() && kept.value("step", nlohmann::json()).is_number_integer()) {
    const std::int64_t step = kept["step"].get<std::int64_t>();
    for (const lineage::StepMetrics& s : steps)
      if (s.step == step && !s.validation.empty()) return s.validation;
  }
  for (auto it = steps.rbegin(); it != steps.rend(); ++it)
    if (!it->validation.empty()) return it->validation;
  return {};
}

Result<std::map<std::string, double>> last_validation(lineage::LineageStore& store,
                                                      const FamilyNode& node) {
  if (!node.stored || !node.stored->recipe_hash) return std::map<std::string, double>{};
  auto runs = store.runs(node.name, 20);  // its training run is among the newest
  if (!runs.is_ok()) return runs.status();
  for (const lineage::RunRecord& run : *runs) {  // newest first
    if (run.status != lineage::RunStatus::kFinished ||
        run.recipe_hash != *node.stored->recipe_hash ||
        (run.kind != lineage::RunKind::kTrain && run.kind != lineage::RunKind::kAdapt))
      continue;
    auto metrics = store.run_metrics(run.id);
    if (!metrics.is_ok()) return metrics.status();
    return stored_validation(run, *metrics);
  }
  return std::map<std::string, double>{};
}

namespace {

bool records_steps(const lineage::RunRecord& r) {
  return r.kind == lineage::RunKind::kTrain || r.kind == lineage::RunKind::kAdapt;
}

}  // namespace

Result<lineage::RunRecord> metrics_run(lineage::LineageStore& store,
                                       const lineage::StoredModel& model, std::int64_t wanted) {
  auto runs = store.runs(model.name, 0);
  if (!runs.is_ok()) return runs.status();
  std::vector<std::string> training;
  for (const lineage::RunRecord& r : *runs)
    if (records_steps(r)) training.push_back(fmt::format("{}", r.id));
  const std::string listed =
      training.empty() ? "it has no training runs"
                       : "its training runs are " + fmt::format("{}", fmt::join(training, ", "));
  if (wanted > 0) {
    for (const lineage::RunRecord& r : *runs)
      if (r.id == wanted) {
        if (records_steps(r)) return r;
        return invalid_argument(
            fmt::format("run {} of '{}' is a {} run, which records no per-step metrics; {}", wanted,
                        model.name, lineage::run_kind_name(r.kind), listed));
      }
    return not_found(fmt::format("model '{}' has no run {}; {}", model.name, wanted, listed));
  }
  for (const lineage::RunRecord& r : *runs)
    if (records_steps(r) && r.status == lineage::RunStatus::kFinished && model.recipe_hash &&
        r.recipe_hash == *model.recipe_hash)
      return r;
  for (const lineage::RunRecord& r : *runs)
    if (records_steps(r)) return r;
  return not_found(fmt::format(
      "model '{}' has no training run with metrics ({}); run `scion run` first", model.name,
      model.recipe_hash ? "its parameters were imported" : "it was never trained"));
}

namespace {

Result<AncestryStep> ancestry_step(lineage::LineageStore& store, const lineage::StoredModel& m) {
  auto runs = store.runs(m.name, 0);
  if (!runs.is_ok()) return runs.status();
  auto datasets = store.datasets_of(m.name);
  if (!datasets.is_ok()) return datasets.status();
  const auto made_by = recipe_run(*runs, m);
  return AncestryStep{
      .model = m,
      .datasets = std::move(*datasets),
      .recipe_run = made_by ? std::optional<std::int64_t>(made_by->id) : std::nullopt,
      .training = training_recipe(made_by)};
}

// Leaves of a JSON value as "a.b.c" -> value, for field-by-field comparison.
void flatten(const nlohmann::json& value, const std::string& path,
             std::map<std::string, nlohmann::json>& out) {
  if (value.is_object() && !value.empty()) {
    for (const auto& [key, child] : value.items())
      flatten(child, path.empty() ? key : path + "." + key, out);
  } else {
    out[path] = value;
  }
}

Result<std::map<std::string, nlohmann::json>> recipe_fields(lineage::LineageStore& store,
                                                            const lineage::StoredModel& m) {
  auto runs = store.runs(m.name, 0);
  if (!runs.is_ok()) return runs.status();
  nlohmann::json recipe = {
      {"parent", m.parent},
      {"recipe_hash", m.recipe_hash ? nlohmann::json(*m.recipe_hash) : nlohmann::json()},
      {"adaptation", spec::in_spec_words(m.adaptation, "adapt")},
      {"architecture", m.architecture},
      {"training", training_recipe(recipe_run(*runs, m))}};
  std::map<std::string, nlohmann::json> out;
  flatten(recipe, "", out);
  return out;
}

}  // namespace

Result<ModelShow> show_model(lineage::LineageStore& store, const std::string& named) {
  auto ref = parse_model_ref(named);
  if (!ref.is_ok()) return ref.status();
  auto version = resolve_version(store, *ref);
  if (!version.is_ok()) return version.status();
  const std::string& model = version->model;
  const bool pinned = !ref->version.empty();  // MODEL@...: that version's runs only
  auto chain = version_ancestry(store, *version);
  if (!chain.is_ok()) return chain.status();
  ModelShow show{.model = model};
  show.version = pinned ? named : "";
  show.current = version->current;
  for (const lineage::StoredModel& m : *chain) {
    auto step = ancestry_step(store, m);
    if (!step.is_ok()) return step.status();
    show.ancestry.push_back(std::move(*step));
  }
  auto runs = store.runs(model, 0);
  if (!runs.is_ok()) return runs.status();
  for (const auto& r : *runs) {
    if (pinned && r.recipe_hash != version->recipe_hash) continue;
    RunWithValidation run{.run = r};
    auto metrics = store.run_metrics(r.id);
    if (!metrics.is_ok()) return metrics.status();
    for (auto it = metrics->rbegin(); it != metrics->rend(); ++it) {
      if (it->validation.empty()) continue;
      run.final_validation = it->validation;
      break;
    }
    (r.kind == lineage::RunKind::kTest ? show.test_runs : show.runs).push_back(std::move(run));
  }
  if (version->current) {
    auto shares = store.sharing(model);
    if (!shares.is_ok()) return shares.status();
    show.shares = std::move(*shares);
  }
  auto evaluations = store.eval_results(model, pinned ? version->recipe_hash : "");
  if (!evaluations.is_ok()) return evaluations.status();
  show.evaluations = std::move(*evaluations);
  show.recipe_hash = version->recipe_hash;
  return show;
}

Result<ModelDiff> diff_models(lineage::LineageStore& store, const std::string& a,
                              const std::string& b) {
  auto version_a = resolve_version(store, a);
  if (!version_a.is_ok()) return version_a.status();
  auto version_b = resolve_version(store, b);
  if (!version_b.is_ok()) return version_b.status();
  auto model_a = store.model_at(version_a->model, version_a->recipe_hash);
  if (!model_a.is_ok()) return model_a.status();
  auto model_b = store.model_at(version_b->model, version_b->recipe_hash);
  if (!model_b.is_ok()) return model_b.status();
  auto params_a = store.parameters(version_a->model, version_a->recipe_hash);
  if (!params_a.is_ok()) return params_a.status();
  auto params_b = store.parameters(version_b->model, version_b->recipe_hash);
  if (!params_b.is_ok()) return params_b.status();
  ModelDiff diff;
  std::map<std::string, const lineage::StoredParameter*> in_b;
  for (const auto& p : *params_b) in_b[p.name] = &p;
  for (const auto& p : *params_a) {
    auto it = in_b.find(p.name);
    if (it == in_b.end()) {
      diff.only_in_a.push_back(p.name);
    } else {
      (it->second->digest == p.digest ? diff.shared : diff.differ).push_back(p.name);
      in_b.erase(it);
    }
  }
  for (const auto& [name, p] : in_b) diff.only_in_b.push_back(name);

  auto fields_a = recipe_fields(store, *model_a);
  if (!fields_a.is_ok()) return fields_a.status();
  auto fields_b = recipe_fields(store, *model_b);
  if (!fields_b.is_ok()) return fields_b.status();
  std::set<std::string> keys;
  for (const auto& [k, v] : *fields_a) keys.insert(k);
  for (const auto& [k, v] : *fields_b) keys.insert(k);
  for (const std::string& k : keys) {
    nlohmann::json va = fields_a->count(k) ? fields_a->at(k) : nlohmann::json();
    nlohmann::json vb = fields_b->count(k) ? fields_b->at(k) : nlohmann::json();
    if (va != vb) diff.recipe.push_back({k, va, vb});
  }
  return diff;
}

std::map<std::int64_t, std::vector<RecipeDifference>> recipe_changes(
    const std::vector<lineage::RunRecord>& runs) {
  const auto makes_version = [](const lineage::RunRecord& r) {
    return is_training(r.kind) || r.kind == lineage::RunKind::kImport;
  };
  std::map<std::int64_t, std::vector<RecipeDifference>> changes;
  std::map<std::string, std::map<std::string, nlohmann::json>> previous;  // by model
  for (auto it = runs.rbegin(); it != runs.rend(); ++it) {                // oldest first
    const lineage::RunRecord& r = *it;
    if (!makes_version(r)) continue;
    // The recipe alone: what keep_best kept is an outcome of the run, recorded beside it.
    nlohmann::json recipe = r.hyperparameters;
    if (recipe.is_object()) recipe.erase("kept");
    std::map<std::string, nlohmann::json> fields;
    flatten(spec::in_spec_words(recipe), "", fields);
    std::vector<RecipeDifference>& changed = changes[r.id];
    if (auto before = previous.find(r.model); before != previous.end()) {
      std::set<std::string> keys;
      for (const auto& [k, v] : fields) keys.insert(k);
      for (const auto& [k, v] : before->second) keys.insert(k);
      for (const std::string& k : keys) {
        nlohmann::json was = before->second.count(k) ? before->second.at(k) : nlohmann::json();
        nlohmann::json now = fields.count(k) ? fields.at(k) : nlohmann::json();
        if (was != now) changed.push_back({k, was, now});
      }
    }
    if (r.status == lineage::RunStatus::kFinished) previous[r.model] = std::move(fields);
  }
  return changes;
}

}  // namespace scion::workbench
