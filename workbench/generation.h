// Generation: what `scion predict --generate` does, as values. Stored causal language
// models continue each prompt (runtime/evaluation/text_generator.h): the models of one
// base generate in one batch, each sequence with its own key/value cache, so different
// descendants (LoRA, prefix, prompt tuning, ...) share every frozen product.
// cli/cmd_predict.cpp prints the result.
#pragma once

#include <string>
#include <vector>

#include "base/status.h"
#include "lineage/store.h"
#include "runtime/backend.h"
#include "runtime/evaluation/text_generator.h"
#include "spec/workspace.h"
#include "workbench/predict_input.h"

namespace scion::workbench {

struct GenerateRequest {
  std::vector<std::string> models;  // a model named twice generates once
  std::vector<PredictText> prompts;
  runtime::GenerationOptions options;
};

struct GeneratedText {
  std::string model;
  std::size_t prompt = 0;  // index into the request's prompts
  runtime::Generation generation;
};

struct Generations {
  std::vector<std::string> models;         // in request order, each once
  std::vector<GeneratedText> generations;  // prompt by prompt, then model by model
};

// The models of `request`, each once, in order. Errors: kNotFound for an unknown model,
// kInvalidArgument for a bad option or for a model that is not a causal language model
// (a classifier, or an encoder's masked LM), saying which models do generate.
Result<std::vector<const spec::Model*>> generating_models(const spec::Workspace& ws,
                                                          const GenerateRequest& request);

// Loads the models (and their ancestors) from `store` onto `backend` and continues every
// prompt with each. Errors: generating_models'; a model not trained for its current
// recipe; a prompt too long for a model; store and runtime errors; kDiverged when a
// model's logits are not finite (its stored parameters are not).
Result<Generations> generate(const spec::Workspace& ws, lineage::LineageStore& store,
                             runtime::Backend& backend, const GenerateRequest& request);

// `scion predict --generate` with models named as MODEL, MODEL@N or MODEL@<prefix>: one
// generate() per version round (workbench/version_rounds.h; the models of one round
// generate co-batched), merged prompt by prompt in the order the models were named;
// models and generations carry the names as given. Errors: version_rounds' and generate's.
Result<Generations> generate_versions(const spec::Workspace& ws, lineage::LineageStore& store,
                                      runtime::Backend& backend, const GenerateRequest& request);

}  // namespace scion::workbench
