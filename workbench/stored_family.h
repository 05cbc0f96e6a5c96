// StoredFamily: trained models of one workspace loaded from the lineage store into ONE
// runtime::ParameterStore, resolved for inference.
//
// Loading a model loads its ancestors first (a ParameterStore needs parents before
// children). Every parameter is held once: the frozen trunk and an ancestor's frozen
// adapters are shared by all descendants that run them, so the models of one base can be
// evaluated co-batched (runtime/evaluation/family_evaluator.h). A model is loadable only
// when the store holds a version of its recipe (the workspace's recipe hash: current or kept);
// otherwise the error says to run `scion run`.
//
// Kinds: a model whose objective (spec::Workspace::objective_of) is classification is a
// classifier: it classifies with the nearest head up its ancestry (its own, an
// ancestor's, or a base trained for classification), classifier(). A model trained with
// masked or causal LM (or an imported base) is a language model: it scores continuations
// with its LM head, language_model().
// Owns the parameter memory and the tokenizers; the workspace and store are borrowed.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "lineage/store.h"
#include "runtime/backend.h"
#include "runtime/evaluation/continuation_scorer.h"
#include "runtime/evaluation/family_evaluator.h"
#include "runtime/model/model_weights.h"
#include "runtime/model/parameter_binding.h"
#include "runtime/text/tokenizer.h"
#include "spec/workspace.h"

namespace scion::workbench {

// What a model answers: class probabilities, or log-likelihoods of continuations.
enum class ModelKind { kClassifier, kLanguageModel };

// A classifier when the model's objective is classification, else a language model.
ModelKind model_kind(const spec::Workspace& ws, const spec::Model& model);
// "classifier" | "language model"
std::string kind_name(ModelKind kind);

// The class names of the head `model` classifies with; nullopt when it has none.
std::optional<std::vector<std::string>> classifier_labels(const spec::Workspace& ws,
                                                          const spec::Model& model);

// The model named `name`, which must classify (with a head of its own or an ancestor's).
// Errors: kNotFound for an unknown name; kInvalidArgument "model 'X' has no classifier
// head" followed by `remedy` for a model without one.
Result<const spec::Model*> find_classifier_model(const spec::Workspace& ws, const std::string& name,
                                                 const std::string& remedy);

class StoredFamily {
 public:
  StoredFamily(const spec::Workspace& ws, lineage::LineageStore& store, runtime::Backend& backend)
      : ws_(ws), store_(store), backend_(backend), pool_(backend) {}

  // Loads `models` and their ancestors (each once; repeated calls add to the family).
  // Errors: a model not in the spec, one not trained for its current recipe, a stored
  // tensor that does not match the spec's shape.
  Status load(std::span<const std::string> models);

  // The loaded model's inference form (classifier head resolved), or nullptr when it has
  // no classifier head. REQUIRES: load() included the model.
  const runtime::EvaluatedModel* classifier(const std::string& model) const;
  // The loaded language model's inference form (LM head, its causal or masked objective),
  // or nullptr for a classifier. REQUIRES: load() included the model.
  const runtime::ScoredModel* language_model(const std::string& model) const;

 private:
  Status load_one(const spec::Model& model);
  // The loaded model's inference forms: classifier, language model, or both.
  Status resolve_one(const spec::Model& model);
  Result<const text::Tokenizer*> tokenizer_for(const spec::Model& model);

  const spec::Workspace& ws_;
  lineage::LineageStore& store_;
  runtime::Backend& backend_;  // holds the parameters: stored values are copied into it
  runtime::ParameterStore pool_;
  std::map<std::string, runtime::ParameterBinding> bindings_;
  std::map<std::string, std::unique_ptr<runtime::ModelWeights>> weights_;
  std::map<std::string, std::unique_ptr<runtime::ModelWeights>> lm_weights_;
  std::map<std::string, runtime::EvaluatedModel> classifiers_;
  std::map<std::string, runtime::ScoredModel> language_models_;
  std::map<std::string, std::unique_ptr<text::Tokenizer>> tokenizers_;  // by base name
};

}  // namespace scion::workbench
