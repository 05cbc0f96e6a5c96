#include "workbench/generation.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>
#include <utility>

#include "workbench/model_lookup.h"
#include "workbench/stored_family.h"
#include "workbench/version_rounds.h"

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
                  "decoder base (GPT-2, Llama, Qwen2, Mistral, Phi-3) or a descendant of one "
                  "trained with objective clm",
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
      result.generations.push_back({result.models[m], q, std::move((*outputs)[m][q])});
  return result;
}

Result<Generations> generate_versions(const spec::Workspace& ws, lineage::LineageStore& store,
                                      runtime::Backend& backend, const GenerateRequest& request) {
  auto rounds = version_rounds(ws, store, request.models);
  if (!rounds) return rounds.status();
  std::vector<Generations> parts;
  for (const VersionRound& round : *rounds) {
    if (round.models.empty()) continue;  // every model named another version
    GenerateRequest part = request;
    part.models = round.models;
    auto result = generate(round.workspace, store, backend, part);
    if (!result) return result.status();
    for (std::string& m : result->models) m = round.labels.at(m);
    for (GeneratedText& g : result->generations) g.model = round.labels.at(g.model);
    parts.push_back(std::move(*result));
  }
  // Models in the order named; prompt by prompt, then model by model, as one round gives them.
  const auto named_at = [&](const std::string& label) {
    return std::find(request.models.begin(), request.models.end(), label) - request.models.begin();
  };
  Generations merged;
  for (Generations& part : parts)
    merged.models.insert(merged.models.end(), part.models.begin(), part.models.end());
  std::stable_sort(
      merged.models.begin(), merged.models.end(),
      [&](const std::string& a, const std::string& b) { return named_at(a) < named_at(b); });
  for (Generations& part : parts)
    for (GeneratedText& g : part.generations) merged.generations.push_back(std::move(g));
  std::stable_sort(merged.generations.begin(), merged.generations.end(),
                   [&](const GeneratedText& a, const GeneratedText& b) {
                     return std::pair(a.prompt, named_at(a.model)) <
                            std::pair(b.prompt, named_at(b.model));
                   });
  return merged;
}

}  // namespace scion::workbench
