#include "spec/recipe_hash.h"

#include <algorithm>
#include <filesystem>
#include <set>

#include "spec/file_digest.h"
#include "spec/spec_json.h"
#include "spec/text_positions.h"

namespace scion::spec {
namespace {

using nlohmann::json;

json to_json(const Dataset& d) {
  // The name and path are left out: moving or renaming a file keeps its identity.
  json out = {{"digest", d.digest},
              {"format", static_cast<int>(d.format)},
              {"text_field", d.text_field},
              {"label_field", d.label_field},
              {"labels", d.labels}};
  // Only where set, so that every recipe from before these keys (single texts with named
  // labels, no prompts) keeps its hash.
  if (!d.text_pair_field.empty()) out["text_pair_field"] = d.text_pair_field;
  if (d.label_type != LabelType::kSingle) out["label_type"] = label_type_name(d.label_type);
  if (d.has_completions()) {
    out["prompt_field"] = d.prompt_field;
    out["completion_field"] = d.completion_field;
  }
  return out;
}

json to_json(const TrainingSpec& t, const Workspace& ws) {
  const OptimizerSpec& o = t.optimizer;
  const Dataset* data = ws.find_dataset(t.dataset);
  json recipe = {
      {"data", data ? to_json(*data) : json()},
      {"objective", static_cast<int>(t.objective)},
      {"steps", t.steps},
      {"epochs", t.epochs},
      {"batch_size", t.batch_size},
      {"grad_accumulation", t.grad_accumulation},
      {"max_length", t.max_length},
      {"validation_split", t.validation_split},
      {"eval_every", t.eval_every},
      {"mask_probability", t.mask_probability},
      {"optimizer",
       {{"type", static_cast<int>(o.kind)},
        {"lr", o.lr},
        {"weight_decay", o.weight_decay},
        {"betas", {o.beta1, o.beta2}},
        {"eps", o.eps},
        {"momentum", o.momentum},
        {"grad_clip", o.grad_clip}}},
      {"schedule",
       {{"type", static_cast<int>(t.schedule.kind)}, {"warmup_steps", t.schedule.warmup_steps}}},
      {"early_stopping",
       {{"metric", t.early_stopping.metric}, {"patience", t.early_stopping.patience}}},
      // A string: JSON numbers lose precision above 2^53.
      {"seed", std::to_string(t.seed)}};
  // Only when not the default, so that fp32 recipes keep the hashes they had before
  // precision existed (and stay up to date in existing stores).
  if (t.precision != Precision::kF32) recipe["precision"] = precision_name(t.precision);
  // Likewise the keys that came with the tasks beyond single-label classification.
  if (!t.validation.empty()) {
    const Dataset* dev = ws.find_dataset(t.validation);
    recipe["validation"] = dev ? to_json(*dev) : json();
  }
  if (!t.keep_best.empty()) recipe["keep_best"] = t.keep_best;
  if (t.class_weights.kind == ClassWeightsSpec::Kind::kBalanced)
    recipe["class_weights"] = "balanced";
  else if (t.class_weights.kind == ClassWeightsSpec::Kind::kExplicit)
    recipe["class_weights"] = t.class_weights.values;
  return recipe;
}

// The shares `model` is in, each as its sorted modules and sorted partner names.
json shares_of(const Workspace& ws, const Model& model) {
  json out = json::array();
  for (const Share& s : ws.shares) {
    if (std::find(s.models.begin(), s.models.end(), model.name) == s.models.end()) continue;
    std::vector<std::string> partners = s.models, modules = s.modules;
    std::sort(partners.begin(), partners.end());
    std::sort(modules.begin(), modules.end());
    out.push_back({{"models", partners}, {"modules", modules}});
  }
  std::sort(out.begin(), out.end());
  return out;
}

// Everything of `model`'s recipe but its share partners' recipes.
json own_recipe(const Workspace& ws, const Model& m) {
  json recipe = {{"name", m.name},
                 {"freeze", m.freeze},
                 {"unfreeze", m.unfreeze},
                 {"shares", shares_of(ws, m)},
                 {"recipe_version", 1}};
  if (m.architecture) {
    recipe["architecture"] = architecture_json(*m.architecture);
    // An imported folder's tokenizer is one of its files, which import_digest covers by
    // content: its name enters the recipe, not where the spec found the folder, so a moved,
    // copied or re-spelled folder keeps its recipe.
    if (!m.architecture->hf_model_type.empty())
      recipe["architecture"]["tokenizer"]["vocab_file"] =
          std::filesystem::path(m.architecture->tokenizer.vocab_file).filename().string();
  }
  if (!m.import_digest.empty()) recipe["import_digest"] = m.import_digest;
  if (!m.is_base()) {
    const Model* parent = ws.find_model(m.from);
    recipe["parent_recipe"] = parent ? parent->recipe_hash : "";
    recipe["adapt"] = adaptation_json(m.adaptation);
    // Only on the bases where prefix tuning moves the text's positions (workspace.h), so
    // that models trained before it did are out of date there and nowhere else.
    if (m.adaptation.prefix && prefix_shifts_positions(ws.architecture_of(m)))
      recipe["adapt"]["prefix"]["text_positions"] = "after_prefix";
  }
  if (m.training) recipe["train"] = to_json(*m.training, ws);
  return recipe;
}

}  // namespace

json canonical_recipe(const Workspace& ws, const Model& m) {
  json recipe = own_recipe(ws, m);
  // The shared modules depend on every model of the unit: its partners' recipes are part
  // of this one (their own recipes, which leave partners out, so nothing is circular).
  json partners = json::array();
  for (const Model* partner : ws.training_unit(m))
    if (partner != &m) partners.push_back(sha256_hex(own_recipe(ws, *partner).dump()));
  if (!partners.empty()) {
    std::sort(partners.begin(), partners.end());
    recipe["partners"] = partners;
  }
  return recipe;
}

std::string recipe_hash(const Workspace& ws, const Model& m) {
  return sha256_hex(canonical_recipe(ws, m).dump());
}

void set_recipe_hashes(Workspace& ws) {
  // A model's hash needs its parent's, and so do its partners' own recipes: hash, pass by
  // pass, every model whose unit's parents all have theirs. The loader has rejected
  // cycles through `from` and `share`, so each pass makes progress.
  std::set<const Model*> done;
  for (bool progress = true; progress && done.size() < ws.models.size();) {
    progress = false;
    for (Model& m : ws.models) {
      if (done.count(&m)) continue;
      const auto unit = ws.training_unit(m);
      const bool ready = std::all_of(unit.begin(), unit.end(), [&](const Model* u) {
        return u->is_base() || done.count(ws.find_model(u->from)) > 0;
      });
      if (!ready) continue;
      m.recipe_hash = recipe_hash(ws, m);
      done.insert(&m);
      progress = true;
    }
  }
}

std::string workspace_digest(const Workspace& ws) {
  nlohmann::json doc = nlohmann::json::object();
  for (const Model& m : ws.models) doc["models"][m.name] = m.recipe_hash;
  for (const Dataset& d : ws.datasets)
    doc["datasets"][d.name] = {{"digest", d.digest},
                               {"format", dataset_format_name(d.format)},
                               {"text_field", d.text_field},
                               {"label_field", d.label_field},
                               {"labels", d.labels}};
  for (const Share& s : ws.shares)
    doc["shares"][s.name] = {{"models", s.models}, {"modules", s.modules}};
  for (const TestSpec& t : ws.tests)
    doc["tests"][t.name] = {{"type", t.type},
                            {"capability", t.capability},
                            {"models", t.models},
                            {"max_failure_rate", t.max_failure_rate},
                            {"body", t.body}};
  for (const AssertionSpec& a : ws.assertions)
    doc["assertions"][a.name] = {{"kind", a.kind}, {"models", a.models}, {"body", a.body}};
  doc["lexicons"] = ws.lexicons;
  return sha256_hex(doc.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
}

}  // namespace scion::spec
