#include "workbench/model_lookup.h"

#include <fmt/format.h>

#include <string_view>
#include <vector>

#include "spec/names.h"
#include "spec/spelling.h"
#include "spec/yaml_tree.h"

namespace scion::workbench {

Status check_model_name(const std::string& name) {
  const std::string problem = spec::name_problem(name);
  if (problem.empty()) return Status::ok();
  return invalid_argument(fmt::format("'{}' is not a model name: it {}; {}", spec::shorten(name),
                                      problem, spec::kNameRule));
}

Status unknown_model(const std::string& name, const std::string& where,
                     std::span<const std::string> known, const std::string& remedy) {
  const std::vector<std::string_view> candidates(known.begin(), known.end());
  const std::string suggestion = spec::did_you_mean(name, candidates);
  return not_found("no model '" + spec::shorten(name) + "' in " + where +
                   (suggestion.empty() ? remedy : suggestion));
}

Result<const spec::Model*> find_spec_model(const spec::Workspace& ws, const std::string& name,
                                           const std::string& remedy) {
  SCION_RETURN_IF_ERROR(check_model_name(name));
  if (const spec::Model* model = ws.find_model(name)) return model;
  std::vector<std::string> known;
  for (const spec::Model& m : ws.models) known.push_back(m.name);
  return unknown_model(name, ws.spec_path.string(), known, remedy);
}

Result<lineage::StoredModel> find_stored_model(lineage::LineageStore& store,
                                               const std::string& name) {
  SCION_RETURN_IF_ERROR(check_model_name(name));
  auto models = store.models();
  if (!models) return models.status();
  std::vector<std::string> known;
  for (lineage::StoredModel& m : *models) {
    if (m.name == name) return std::move(m);
    known.push_back(m.name);
  }
  return unknown_model(name, "the store '" + store.dir().string() + "'", known,
                       "; see 'scion lineage tree' for the models it holds");
}

}  // namespace scion::workbench
