#include "workbench/stored_family.h"


#include "workbench/model_lookup.h"

namespace scion::workbench {

ModelKind model_kind(const spec::Workspace& ws, const spec::Model& model) {
  return ws.objective_of(model) == spec::Objective::kClassification ? ModelKind::kClassifier
                                                                    : ModelKind::kLanguageModel;
}

std::string kind_name(ModelKind kind) {
  return kind == ModelKind::kClassifier ? "classifier" : "language model";
}

std::optional<std::vector<std::string>> classifier_labels(const spec::Workspace& ws,
                                                          const spec::Model& model) {
  for (const spec::Model* m : ws.ancestry(model)) {
    if (m->adaptation.head) return m->adaptation.head->labels;
    if (m->is_base() && m->training && m->training->objective == spec::Objective::kClassification)
      if (const spec::Dataset* data = ws.find_dataset(m->training->dataset)) return data->labels;
  }
  return std::nullopt;
}

Result<const spec::Model*> find_classifier_model(const spec::Workspace& ws, const std::string& name,
                                                 const std::string& remedy) {
  auto found = find_spec_model(ws, name);
  if (!found) return found.status();
  const spec::Model* model = *found;
  if (!classifier_labels(ws, *model))
    return invalid_argument("model '" + name + "' has no classifier head" + remedy);
  return model;
}

Status StoredFamily::load(std::span<const std::string> models) {
  for (const std::string& name : models) {
    auto model = find_spec_model(ws_, name);
    if (!model) return model.status();
    auto chain = ws_.ancestry(**model);
    for (auto it = chain.rbegin(); it != chain.rend(); ++it)
      if (!bindings_.count((*it)->name)) SCION_RETURN_IF_ERROR(load_one(**it));
  }
  return Status::ok();
}

Result<const text::Tokenizer*> StoredFamily::tokenizer_for(const spec::Model& model) {
  const std::string& base = ws_.ancestry(model).back()->name;
  auto it = tokenizers_.find(base);
  if (it == tokenizers_.end()) {
    auto made = text::make_tokenizer(ws_.architecture_of(model).tokenizer, ws_.root_dir);
    if (!made) return made.status();
    it = tokenizers_.emplace(base, std::move(*made)).first;
  }
  return it->second.get();
}

Status StoredFamily::load_one(const spec::Model& model) {
  auto stored = store_.find_model(model.name);
  if (!stored) return stored.status();
  if (!stored->has_value() || !(*stored)->recipe_hash)
    return invalid_argument("model '" + model.name + "' is not trained: run `scion run` first");
  // The version of the workspace's recipe: the current one, or an older one kept in the
  // store (a spec reverted before `scion run`, or a workspace_at() of an older version).
  const bool current = *(*stored)->recipe_hash == model.recipe_hash;
  if (!current) {
    auto version = store_.find_version(model.name, model.recipe_hash);
    if (!version) return version.status();
    if (!version->has_value())
      return invalid_argument("model '" + model.name +
                              "' is out of date (its recipe changed since it was trained): run "
                              "`scion run` first");
  }
  auto values = current ? store_.load_parameters(model.name)
                        : store_.load_parameters(model.name, model.recipe_hash);
  if (!values) return values.status();
  // Only what this model introduced or retrains is loaded; the rest is shared with the
  // ancestor that introduced it and was loaded with that ancestor. A loaded value equal
  // to one already in memory (same digest) shares that buffer instead.
  const std::vector<runtime::ParameterSpec> table = runtime::parameter_table(ws_, model);
  std::map<std::string, std::string> digests;
  for (const runtime::ParameterSpec& p : table)
    if (p.introduced_by == model.name || p.trainable)
      if (auto it = values->find(p.name); it != values->end()) digests[p.name] = it->second.digest;
  auto added = pool_.add_stored_model(ws_, model, digests);
  if (!added) return added.status();
  const runtime::ParameterBinding& binding = *added;
  for (const runtime::ParameterSpec& p : table) {
    if (p.introduced_by != model.name && !p.trainable) continue;
    auto it = values->find(p.name);
    const runtime::Tensor* view = binding.find(p.name);
    if (it == values->end() || view == nullptr)
      return corruption("parameter '" + p.name + "' of '" + model.name +
                        "' is missing from the store; retrain it with `scion run` after "
                        "`scion gc`, or check the store with `scion fsck`");
    if (it->second.bytes.size() != view->bytes() || it->second.dtype != lineage::DType::kF32)
      return corruption("stored parameter '" + p.name + "' of '" + model.name +
                        "' does not match the spec's shape " + runtime::shape_string(p.shape));
    if (pool_.is_new(*view))
      backend_.copy_to_device(view->data, it->second.bytes.data(), view->bytes());
  }
  bindings_[model.name] = binding;
  return resolve_one(model);
}

Status StoredFamily::resolve_one(const spec::Model& model) {
  auto tokenizer = tokenizer_for(model);
  if (!tokenizer) return tokenizer.status();
  if (model_kind(ws_, model) == ModelKind::kLanguageModel) {
    auto weights =
        runtime::resolve_model(ws_, model, ws_.objective_of(model), bindings_[model.name], nullptr);
    if (!weights) return weights.status();
    auto& held = lm_weights_[model.name] =
        std::make_unique<runtime::ModelWeights>(std::move(*weights));
    language_models_[model.name] = {.weights = held.get(), .tokenizer = *tokenizer};
  }
  // A language model adapted from a classifier still holds its ancestor's head.
  auto labels = classifier_labels(ws_, model);
  if (!labels) return Status::ok();
  auto weights = runtime::resolve_model(ws_, model, spec::Objective::kClassification,
                                        bindings_[model.name], nullptr);
  if (!weights) return weights.status();
  auto& held = weights_[model.name] = std::make_unique<runtime::ModelWeights>(std::move(*weights));
  const spec::HeadSpec* head = ws_.head_of(model);
  classifiers_[model.name] = {.weights = held.get(),
                              .tokenizer = *tokenizer,
                              .labels = *labels,
                              .threshold = head ? head->decision_threshold() : 0.5f};
  return Status::ok();
}

const runtime::EvaluatedModel* StoredFamily::classifier(const std::string& model) const {
  auto it = classifiers_.find(model);
  return it == classifiers_.end() ? nullptr : &it->second;
}

const runtime::ScoredModel* StoredFamily::language_model(const std::string& model) const {
  auto it = language_models_.find(model);
  return it == language_models_.end() ? nullptr : &it->second;
}

}  // namespace scion::workbench
