#include "workbench/generation.h"

#include <fmt/format.h>

#include <set>

#include "workbench/model_lookup.h"
#include "workbench/stored_family.h"

namespace scion::workbench {
namespace {

// invalid_argument unless `model` is a causal language model.
Status check_generates(const spec::Workspace& ws, const spec::Model& model) {
  const spec::Objective objective = ws.objective_of(model);
  if (objective == spec::Objective::kCausalLm) return Status::ok();
  const std::string what = objective == spec::Objective::kClassification
                               ? "a classifier"
                               : "a masked language model (an encoder)";
  return invalid_argument(
      fmt::format("model '{}' is {}, and --generate continues text with a causal language model: a "
                  "decoder base (GPT-2, Llama) or a descendant of one trained with objective clm",
                  model.name, what));
}

}  // namespace

Result<std::vector<const spec::Model*>> generating_models(const spec::Workspace& ws,
                                                          const GenerateRequest& request) {
  SCION_RETURN_IF_ERROR(runtime::check_generation(request.options));
  std::vector<const spec::Model*> models;
  std::set<std::string> seen;
  for (const std::string& name : request.models) {
    if (!seen.insert(name).second) continue;
    auto model = find_spec_model(ws, name);
    if (!model) return model.status();
    SCION_RETURN_IF_ERROR(check_generates(ws, **model));
    models.push_back(*model);
  }
  return models;
}

Result<Generations> generate(const spec::Workspace& ws, lineage::LineageStore& store,
                             runtime::Backend& backend, const GenerateRequest& request) {
  auto models = generating_models(ws, request);
  if (!models) return models.status();
  Generations result;
  for (const spec::Model* m : *models) result.models.push_back(m->name);
  StoredFamily family(ws, store, backend);
  SCION_RETURN_IF_ERROR(family.load(result.models));
  std::vector<runtime::ScoredModel> scored;
  for (const std::string& name : result.models) scored.push_back(*family.language_model(name));
  std::vector<std::string> prompts;
  for (const PredictText& p : request.prompts) prompts.push_back(p.text);
  runtime::GenerationOptions options = request.options;
  for (const PredictText& p : request.prompts) options.prompt_names.push_back(p.origin);
  runtime::TextGenerator generator(backend);
  auto outputs = generator.generate(scored, prompts, options);
  if (!outputs) return outputs.status();
  for (std::size_t q = 0; q < prompts.size(); ++q)
    for (std::size_t m = 0; m < scored.size(); ++m)
      result.generations.push_back(
          {result.models[m], &request.prompts[q], std::move((*outputs)[m][q])});
  return result;
}

}  // namespace scion::workbench
