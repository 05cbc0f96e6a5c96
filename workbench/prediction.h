// Prediction: what `scion predict` does, as values. Stored classifiers label texts in one
// evaluation of the family (what their ancestry has in common is computed once, as
// `scion test` evaluates it); with assertions on, each model's model assertions are
// checked on every prediction (and on its perturbed text, and against its parent's
// answer, where an assertion asks for them). cli/cmd_predict.cpp prints the result.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "assertions/model_assertion.h"
#include "assertions/model_output.h"
#include "base/status.h"
#include "lineage/store.h"
#include "runtime/backend.h"
#include "spec/workspace.h"
#include "workbench/behaviour_suite.h"
#include "workbench/predict_input.h"

namespace scion::workbench {

// One model to predict with: the assertions checked on its predictions and the parent
// that some of them compare with.
struct Predictor {
  const spec::Model* model = nullptr;
  const spec::Model* parent = nullptr;  // the parent, when it is a classifier
  std::vector<const assertions::ModelAssertion*> checks;
};

// An assertion a prediction violates.
struct PredictionViolation {
  std::string assertion;
  double severity = 0;
  std::string perturbed;  // the perturbed text it compared with; empty: none
};

struct Prediction {
  std::string model;
  std::string text;
  std::optional<std::string> pair;  // a sentence pair's second text
  assertions::ModelOutput output;
  std::vector<PredictionViolation> violations;  // empty without assertions
};

// A text longer than some models read: each such model classifies its first tokens.
struct Truncation {
  std::string origin;  // where the text came from ("--text 2", "reviews.jsonl:3")
  std::size_t tokens = 0;
  std::vector<std::pair<std::string, std::size_t>> readers;  // (model, tokens it reads)
};

struct PredictRequest {
  std::vector<std::string> models;  // a model named twice answers once
  std::vector<PredictText> texts;
  bool check_assertions = false;
  int chunk_size = 64;
};

struct PredictionSetup {
  std::vector<Predictor> predictors;  // in request order, each model once
  // Assertions that cannot be checked ("assertion 'a' skipped for 'm': ...").
  std::vector<std::string> notes;
  BehaviourSuite suite;  // what `checks` point into
};

struct Predictions {
  std::vector<std::string> models;      // the predictors' names, in order
  std::vector<Prediction> predictions;  // text by text, then model by model
  std::vector<Truncation> truncated;
  std::size_t checks = 0;      // assertions checked per text, over all models
  std::size_t violations = 0;  // over every prediction
};

// The predictors for `request` (assertions compiled when asked for).
// Errors: kInvalidArgument for a model that does not classify (a language model),
// kNotFound for an unknown model, the suite's compile errors.
Result<PredictionSetup> prepare_predictions(const spec::Workspace& ws,
                                            const PredictRequest& request);

// Loads the predictors (and parents their assertions need) from `store` onto `backend`,
// evaluates every text once per model and checks the assertions.
// Errors: a model not trained for its current recipe, store and runtime errors;
// kDiverged when a probability is NaN or infinite (no prediction is returned then).
Result<Predictions> predict(const spec::Workspace& ws, lineage::LineageStore& store,
                            runtime::Backend& backend, const PredictionSetup& setup,
                            const PredictRequest& request);

// `scion predict` with models named as MODEL, MODEL@N or MODEL@<prefix>: one
// prepare_predictions + predict per version round (workbench/version_rounds.h), merged
// text by text; models, predictions and truncations carry the names as given. `notes`
// gets every round's notes, also when an error follows.
Result<Predictions> predict_versions(const spec::Workspace& ws, lineage::LineageStore& store,
                                     runtime::Backend& backend, const PredictRequest& request,
                                     std::vector<std::string>& notes);

// The assertions `p` violates on `input`, from evaluated outputs (of `p`'s model, and of
// its parent and the perturbed input, its first text perturbed, where an assertion needs
// them).
Result<std::vector<PredictionViolation>> violations_of(const Predictor& p,
                                                       const runtime::ModelInput& input,
                                                       const FamilyOutputs& outputs);

// kDiverged naming the first model and input whose output holds a NaN or an infinity:
// such an output is no prediction.
Status check_finite(const std::vector<Predictor>& predictors,
                    const std::vector<runtime::ModelInput>& inputs, const FamilyOutputs& outputs);

}  // namespace scion::workbench
