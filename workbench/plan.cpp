#include "workbench/plan.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <functional>
#include <map>
#include <set>

#include "runtime/adapters/lora/lora_spec.h"
#include "runtime/data/dataset_reader.h"
#include "runtime/memory_info.h"
#include "runtime/model/parameter_table.h"
#include "runtime/model/shared_modules.h"
#include "spec/recipe_hash.h"
#include "spec/vocabulary.h"
#include "workbench/checkpoint_file.h"
#include "workbench/model_lookup.h"

namespace scion::workbench {
namespace {

using FrozenSet = std::set<std::pair<std::string, std::string>>;  // (name, introduced by)

std::vector<std::string> methods_of(const spec::Model& m) {
  if (m.is_base()) return {m.import_path.empty() ? "pretrain" : "import"};
  const spec::Adaptation& a = m.adaptation;
  std::vector<std::string> out;
  if (a.find<spec::LoraSpec>() != nullptr) out.push_back("lora");
  if (a.prefix) out.push_back("prefix");
  if (a.prompt) out.push_back("prompt");
  // The other registered methods (spec/adaptation_method.h), in registration order.
  for (const spec::MethodBlock* block : spec::method_blocks())
    if (block->key() != spec::LoraSpec::kKey && a.methods.contains(block->key()))
      out.emplace_back(block->key());
  const std::pair<bool, const char*> switches[] = {
      {a.bitfit.has_value(), "bitfit"}, {a.full.has_value(), "full"}, {a.head.has_value(), "head"}};
  for (const auto& [on, name] : switches)
    if (on) out.push_back(name);
  return out;
}

// What the spec alone says of `m`; `examples` counts a dataset's examples (for epochs).
PlannedModel describe(const spec::Workspace& ws, const spec::Model& m, FrozenSet& frozen,
                      const std::function<std::int64_t(const std::string&)>& examples) {
  PlannedModel p;
  p.name = m.name;
  p.parent = m.is_base() ? "" : m.from;
  p.trunk = ws.ancestry(m).back()->name;
  p.methods = methods_of(m);
  p.recipe_hash = m.recipe_hash;
  p.architecture = m.architecture;
  p.import_path = m.import_path;
  std::map<std::string, std::int64_t> frozen_by_origin;
  for (const runtime::ParameterSpec& param : runtime::parameter_table(ws, m)) {
    p.total_parameters += param.numel();
    if (param.trainable && m.training) {  // an imported base is read, never trained
      p.trainable_parameters += param.numel();
    } else {
      frozen_by_origin[param.introduced_by] += param.numel();
      frozen.insert({param.name, param.introduced_by});
    }
  }
  // Ancestors from the base down, so the list reads like the lineage.
  const auto chain = ws.ancestry(m);
  for (auto it = chain.rbegin(); it != chain.rend(); ++it)
    if (frozen_by_origin.count((*it)->name))
      p.inherited.emplace_back((*it)->name, frozen_by_origin[(*it)->name]);
  if (!m.training) return p;
  const spec::TrainingSpec& t = *m.training;
  p.objective = spec::word(t.objective);
  p.dataset = t.dataset;
  p.memory = estimate_training_memory(ws, m, p.total_parameters, p.trainable_parameters);
  p.steps = recipe_steps(m, t.steps > 0 ? 0 : examples(t.dataset));
  const std::int64_t length = t.max_length > 0 ? t.max_length : ws.architecture_of(m).max_length;
  const double tokens_per_step = static_cast<double>(t.batch_size) *
                                 std::max(1, t.grad_accumulation) * static_cast<double>(length);
  p.flops = static_cast<double>(p.steps) * tokens_per_step *
            training_flops_per_token(ws, m, p.total_parameters, p.trainable_parameters);
  return p;
}

// Trained descendants grouped by identical frozen inherited parameters, in spec order.
std::vector<CobatchSet> cobatch_sets(const spec::Workspace& ws,
                                     const std::vector<PlannedModel>& models,
                                     const std::vector<FrozenSet>& frozen) {
  std::map<FrozenSet, std::size_t> index_of;
  std::vector<CobatchSet> sets;
  for (std::size_t i = 0; i < models.size(); ++i) {
    const spec::Model& m = ws.models[i];
    if (m.is_base() || !m.training) continue;
    auto [it, added] = index_of.try_emplace(frozen[i], sets.size());
    if (added) {
      std::int64_t count = 0;
      for (const auto& [origin, n] : models[i].inherited) count += n;
      sets.push_back({{}, count});
    }
    sets[it->second].models.push_back(m.name);
  }
  return sets;
}

FamilyWeights family_weights(const spec::Workspace& ws) {
  FamilyWeights w;
  const runtime::SharedModules shares(ws);
  std::set<runtime::ParameterKey> held;
  for (const spec::Model& m : ws.models)
    for (const runtime::ParameterSpec& p : runtime::parameter_table(ws, m)) {
      const std::int64_t bytes = p.numel() * static_cast<std::int64_t>(sizeof(float));
      w.unshared_bytes += bytes;
      if (held.insert(shares.canonical({p.introduced_by, p.name})).second) w.shared_bytes += bytes;
    }
  return w;
}

bool in_scope(const spec::Model& m, TrainScope scope) {
  if (scope == TrainScope::kAll) return true;
  return (scope == TrainScope::kBases) == m.is_base();
}

// Whether models are stored for their current recipes, asked once per model. Notes a
// model whose stored objects are missing, once.
class StoreView {
 public:
  StoreView(lineage::LineageStore* store, std::vector<std::string>& notes)
      : store_(store), notes_(notes) {}

  Result<bool> up_to_date(const spec::Model& model) {
    if (auto known = fresh_.find(model.name); known != fresh_.end()) return known->second;
    auto fresh = check(model);
    if (fresh) fresh_[model.name] = *fresh;
    return fresh;
  }
  // Why a model that is not up to date runs: the words of `scion plan`.
  std::string why_out_of_date(const spec::Model& model) const {
    if (store_ == nullptr) return "no store yet";
    if (auto it = why_.find(model.name); it != why_.end()) return it->second;
    return "not in the store";
  }
  // The stored version of the model's current recipe that is not its current version, with
  // every object present; nullopt when there is none.
  Result<std::optional<lineage::StoredVersion>> restorable(const spec::Model& model) {
    using None = std::optional<lineage::StoredVersion>;
    if (store_ == nullptr) return None();
    auto stored = store_->find_model(model.name);
    if (!stored) return stored.status();
    if (!stored->has_value()) return None();
    auto version = store_->find_version(model.name, model.recipe_hash);
    if (!version) return version.status();
    if (!version->has_value() || (*version)->current) return None();
    auto missing = store_->missing_objects(model.name, model.recipe_hash);
    if (!missing) return missing.status();
    if (!missing->empty()) return None();
    return version;
  }
  bool has_checkpoint(const spec::Model& model) const {
    return store_ != nullptr &&
           workbench::has_checkpoint(store_->env(), store_->dir(), model.recipe_hash);
  }

 private:
  Result<bool> check(const spec::Model& model) {
    if (store_ == nullptr) return false;
    auto stored = store_->find_model(model.name);
    if (!stored) return stored.status();
    if (!stored->has_value()) return false;
    if ((*stored)->recipe_hash != model.recipe_hash) {
      why_[model.name] = "its recipe changed";
      return false;
    }
    auto missing = store_->missing_objects(model.name);
    if (!missing) return missing.status();
    if (missing->empty()) return true;
    why_[model.name] = fmt::format("{} of its stored objects are missing", missing->size());
    notes_.push_back(fmt::format(
        "'{}' is not up to date: {} of its stored objects are missing ({}{}); it "
        "trains again (an imported model: import it again)",
        model.name, missing->size(), store_->objects().path_for(missing->front().digest).string(),
        missing->size() > 1 ? ", ..." : ""));
    return false;
  }

  lineage::LineageStore* store_;
  std::vector<std::string>& notes_;
  std::map<std::string, bool> fresh_;
  std::map<std::string, std::string> why_;
};

// Why `model` cannot train: its parent is not stored for its current recipe, and the
// command that stores it (an imported base is imported, not trained).
Status parent_missing(const spec::Workspace& ws, const spec::Model& model) {
  const spec::Model& parent = *ws.find_model(model.from);
  if (!parent.import_path.empty())
    return invalid_argument("'" + model.name + "' needs its parent '" + parent.name +
                            "' imported first: run `scion run` (it imports it), or `scion import " +
                            parent.import_path + " --as " + parent.name + "`");
  return invalid_argument("'" + model.name + "' needs its parent '" + parent.name +
                          "' trained first: run `scion run`, or `scion " +
                          (parent.is_base() ? "train " : "adapt ") + parent.name + "`");
}

// The models the request names (in its order), or every model in its scope.
Result<std::vector<const spec::Model*>> chosen_models(const spec::Workspace& ws,
                                                      const TrainRequest& request) {
  std::vector<const spec::Model*> chosen;
  for (const std::string& name : request.models) {
    auto found = find_spec_model(ws, name);
    if (!found) return found.status();
    const spec::Model* m = *found;
    if (!in_scope(*m, request.scope))
      return invalid_argument("'" + name + "' is " +
                              (m->is_base() ? "a base: train it with `scion train`"
                                            : "a descendant: train it with `scion adapt`"));
    chosen.push_back(m);
  }
  if (request.models.empty())
    for (const spec::Model& m : ws.models)
      if (in_scope(m, request.scope)) chosen.push_back(&m);
  return chosen;
}

// "restores the version of run 12" (or of recipe 3fa9c2e1b0d4, from a store older than
// versions, which did not record the run).
std::string restore_reason(const lineage::StoredVersion& version) {
  if (version.run) return fmt::format("the version of run {} comes back", *version.run);
  return "the version of recipe " + version.recipe_hash.substr(0, 12) + " comes back";
}

// The state of each chosen model from the store alone: up to date, restores (a stored
// version of its recipe), imports, or runs. `versions` gets each restorable version.
Status first_states(const TrainRequest& request, StoreView& store,
                    const std::vector<const spec::Model*>& chosen,
                    std::map<std::string, PlannedModel*>& by_name,
                    std::map<std::string, lineage::StoredVersion>& versions) {
  for (const spec::Model* m : chosen) {
    PlannedModel& p = *by_name.at(m->name);
    auto fresh = store.up_to_date(*m);
    if (!fresh) return fresh.status();
    // An interrupted `--force` run leaves a checkpoint of a model that is still up to
    // date with its earlier parameters: --resume means to finish that run.
    const bool resumable = m->training && request.resume && store.has_checkpoint(*m);
    p.state = ModelState::kUpToDate;
    p.reason = m->training ? "stored" : "imported";
    if ((*fresh || (!m->training && m->import_path.empty())) && !request.force && !resumable)
      continue;
    if (!*fresh && !resumable && !request.force) {
      auto version = store.restorable(*m);
      if (!version) return version.status();
      if (version->has_value()) {
        p.state = ModelState::kRestores;
        p.restores_run = (*version)->run;
        p.reason = restore_reason(**version);
        versions.emplace(m->name, **version);
        continue;
      }
    }
    if (!m->training) {
      if (*fresh) continue;  // an imported base is never imported again by --force
      p.state = ModelState::kImports;
      p.reason = "from " + m->import_path;
      continue;
    }
    p.state = ModelState::kRuns;
    p.reason = !*fresh ? store.why_out_of_date(*m) : request.force ? "--force" : "--resume";
  }
  return Status::ok();
}

// Models that share modules train as one unit: one of them running brings the others
// (also those outside the request, up to date or restored). Returns whether any changed.
bool bring_unit_partners(const spec::Workspace& ws, std::map<std::string, PlannedModel*>& by_name,
                         Plan& plan) {
  bool changed = false;
  for (const spec::Model& m : ws.models) {
    if (by_name.at(m.name)->state != ModelState::kRuns) continue;
    for (const spec::Model* partner : ws.training_unit(m)) {
      PlannedModel& p = *by_name.at(partner->name);
      if (p.state == ModelState::kRuns) continue;
      p.state = ModelState::kRuns;
      p.restores_run.reset();
      p.reason = "shares modules with '" + m.name + "'";
      plan.notes.push_back("'" + partner->name + "' trains too: it shares modules with '" + m.name +
                           "'");
      changed = true;
    }
  }
  return changed;
}

// A restored version is right only when its parent ends the plan at the version it was
// made from: a parent that trains or is imported makes new parameters, so the descendant
// trains too. Returns whether any changed.
bool retrain_orphaned_restores(const spec::Workspace& ws,
                               std::map<std::string, PlannedModel*>& by_name,
                               const std::map<std::string, lineage::StoredVersion>& versions) {
  bool changed = false;
  for (const spec::Model& m : ws.models) {  // parents first
    PlannedModel& p = *by_name.at(m.name);
    if (p.state != ModelState::kRestores || m.is_base()) continue;
    const PlannedModel& parent = *by_name.at(m.from);
    const lineage::StoredVersion& version = versions.at(m.name);
    const bool parent_new =
        parent.state == ModelState::kRuns || parent.state == ModelState::kImports;
    const bool made_from_it = version.parent_recipe_hash == ws.find_model(m.from)->recipe_hash;
    if (!parent_new && made_from_it) continue;
    p.state = m.training ? ModelState::kRuns : ModelState::kImports;
    p.restores_run.reset();
    p.reason = parent_new ? "its parent '" + m.from + "' is made anew"
                          : "its stored version was made from another version of '" + m.from + "'";
    changed = true;
  }
  return changed;
}

// A model that restores, imports or runs needs its parent stored at its current recipe,
// or restored, imported or trained before it; otherwise it is blocked.
Status block_orphans(const spec::Workspace& ws, StoreView& store,
                     std::map<std::string, PlannedModel*>& by_name) {
  for (const spec::Model& m : ws.models) {
    PlannedModel& p = *by_name.at(m.name);
    if (m.is_base()) continue;
    if (p.state != ModelState::kRuns && p.state != ModelState::kRestores) continue;
    const PlannedModel& parent = *by_name.at(m.from);
    if (parent.state == ModelState::kRuns || parent.state == ModelState::kRestores ||
        parent.state == ModelState::kImports)
      continue;
    auto fresh = store.up_to_date(*ws.find_model(m.from));
    if (!fresh) return fresh.status();
    if (*fresh) continue;
    p.state = ModelState::kBlocked;
    p.restores_run.reset();
    p.reason = parent.state == ModelState::kBlocked ? "waits for blocked '" + m.from + "'"
                                                    : "parent '" + m.from + "' not stored";
    p.blocker = parent.state == ModelState::kBlocked && !parent.blocker.is_ok()
                    ? parent.blocker
                    : parent_missing(ws, m);
  }
  return Status::ok();
}

// Decides each model's state: up to date, restores, imports, runs (and why), blocked, or
// not selected.
Status decide_states(const spec::Workspace& ws, const TrainRequest& request, StoreView& store,
                     Plan& plan) {
  auto chosen = chosen_models(ws, request);
  if (!chosen) return chosen.status();
  std::map<std::string, PlannedModel*> by_name;
  for (PlannedModel& p : plan.models) by_name[p.name] = &p;
  std::map<std::string, lineage::StoredVersion> versions;
  SCION_RETURN_IF_ERROR(first_states(request, store, *chosen, by_name, versions));
  // Each round can only turn restores and up-to-date models into runs: it ends.
  for (bool changed = true; changed;) {
    changed = bring_unit_partners(ws, by_name, plan);
    changed = retrain_orphaned_restores(ws, by_name, versions) || changed;
  }
  return block_orphans(ws, store, by_name);
}

// Shares declared between models of `group`.
std::vector<std::string> shares_within(const spec::Workspace& ws,
                                       const std::vector<const spec::Model*>& group) {
  std::vector<std::string> names;
  for (const spec::Share& share : ws.shares)
    if (std::any_of(group.begin(), group.end(), [&](const spec::Model* m) {
          return std::find(share.models.begin(), share.models.end(), m->name) != share.models.end();
        }))
      names.push_back(share.name);
  return names;
}

void form_groups(const spec::Workspace& ws, Plan& plan) {
  std::vector<const spec::Model*> running;
  for (std::size_t i = 0; i < plan.models.size(); ++i)
    if (plan.models[i].state == ModelState::kRuns) running.push_back(&ws.models[i]);
  const auto waves = training_waves(ws, running);
  for (std::size_t wave = 0; wave < waves.size(); ++wave)
    for (const auto& members : training_groups(ws, waves[wave], plan.budget_bytes)) {
      PlannedGroup g;
      g.wave = wave;
      g.trunk = ws.ancestry(*members.front()).back()->name;
      g.precision = members.front()->training->precision;
      g.memory_bytes = group_memory_bytes(ws, members);
      g.shares = shares_within(ws, members);
      for (const spec::Model* m : members) {
        g.models.push_back(m->name);
        g.flops += plan.find(m->name)->flops;
      }
      g.over_available = plan.available_bytes && g.memory_bytes > *plan.available_bytes;
      g.over_budget = plan.explicit_budget_bytes > 0 && g.memory_bytes > plan.explicit_budget_bytes;
      plan.groups.push_back(std::move(g));
    }
}

}  // namespace

const char* model_state_name(ModelState state) {
  switch (state) {
    case ModelState::kUpToDate:
      return "up to date";
    case ModelState::kRestores:
      return "restores";
    case ModelState::kImports:
      return "imports";
    case ModelState::kRuns:
      return "runs";
    case ModelState::kBlocked:
      return "blocked";
    case ModelState::kNotSelected:
      return "not selected";
  }
  return "not selected";
}

const PlannedModel* Plan::find(const std::string& name) const {
  for (const PlannedModel& m : models)
    if (m.name == name) return &m;
  return nullptr;
}

Status Plan::blocked() const {
  for (const PlannedModel& m : models)
    if (m.state == ModelState::kBlocked) return m.blocker;
  return Status::ok();
}

Status Plan::memory_refusal() const {
  for (const PlannedGroup& g : groups) {
    if (!g.over_available && !g.over_budget) continue;
    std::vector<std::string> names;
    for (const std::string& m : g.models) names.push_back("'" + m + "'");
    const std::string limit =
        g.over_available
            ? runtime::memory_size(*available_bytes) + " available"
            : runtime::memory_size(explicit_budget_bytes) + " allowed by --memory-budget";
    return Status(
        StatusCode::kOutOfMemory,
        fmt::format("training {} needs {}, {}; lower batch_size or max_length (or the "
                    "architecture's size) in {}, or pass --ignore-memory-limit to try anyway",
                    fmt::join(names, ", "), runtime::memory_size(g.memory_bytes), limit,
                    spec_path));
  }
  return Status::ok();
}

Result<Plan> make_plan(const spec::Workspace& ws, lineage::LineageStore* store,
                       const TrainRequest& request) {
  Plan plan;
  plan.spec_path = ws.spec_path.string();
  plan.store_exists = store != nullptr;
  if (store) plan.store_path = store->dir().string();
  plan.explicit_budget_bytes = request.memory_budget_mib << 20;
  plan.budget_bytes =
      request.memory_budget_mib > 0 ? plan.explicit_budget_bytes : default_memory_budget_bytes();
  plan.available_bytes = runtime::available_memory_bytes();
  plan.weights = family_weights(ws);

  std::map<std::string, std::int64_t> examples;  // by dataset, read once
  auto count_examples = [&](const std::string& dataset) -> std::int64_t {
    if (auto it = examples.find(dataset); it != examples.end()) return it->second;
    auto read = data::read_dataset(*ws.find_dataset(dataset));
    return examples[dataset] = read ? read->rows() : 0;
  };
  std::vector<FrozenSet> frozen(ws.models.size());
  for (std::size_t i = 0; i < ws.models.size(); ++i)
    plan.models.push_back(describe(ws, ws.models[i], frozen[i], count_examples));
  plan.cobatch = cobatch_sets(ws, plan.models, frozen);

  StoreView view(store, plan.notes);
  SCION_RETURN_IF_ERROR(decide_states(ws, request, view, plan));
  form_groups(ws, plan);
  return plan;
}

Result<Plan> make_plan(const CheckedWorkspace& checked, lineage::LineageStore* store,
                       const TrainRequest& request) {
  if (!checked.workspace)
    return Status(StatusCode::kSpecError,
                  fmt::format("the spec has {} error(s); fix them (`scion validate` lists them) "
                              "and plan again",
                              checked.errors.size()));
  return make_plan(*checked.workspace, store, request);
}

bool overrides_recipes(const TrainRequest& request) {
  return request.precision.has_value() || request.recompute;
}

spec::Workspace with_overrides(const spec::Workspace& ws, const TrainRequest& request) {
  spec::Workspace overridden = ws;
  for (spec::Model& model : overridden.models) {
    if (!model.training) continue;
    if (request.precision) model.training->precision = *request.precision;
    if (request.recompute) model.training->recompute = true;
  }
  spec::set_recipe_hashes(overridden);
  return overridden;
}

}  // namespace scion::workbench
