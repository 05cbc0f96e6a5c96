#include "lineage/spec_records.h"

#include "spec/adaptation_method.h"
#include "spec/spec_json.h"

namespace scion::lineage {

using nlohmann::json;

ModelRecord model_record_for(const spec::Workspace& workspace, const spec::Model& model) {
  ModelRecord record;
  record.name = model.name;
  record.parent = model.from;
  record.recipe_hash = model.recipe_hash;
  record.adaptation = spec::adaptation_in_words(model.adaptation);
  record.architecture = spec::architecture_in_words(workspace.architecture_of(model));
  if (model.training)
    if (const spec::Dataset* data = workspace.find_dataset(model.training->dataset))
      record.data_digests.push_back(data->digest);
  return record;
}

std::string method_label(const json& adaptation) {
  if (!adaptation.is_object() || adaptation.empty()) return "base";
  std::string label;
  for (const auto& [method, params] : adaptation.items()) {
    if (!label.empty()) label += "+";
    label += method;
    if (const spec::MethodBlock* block = spec::find_method_block(method))
      label += block->label(params);
    if ((method == "prefix" || method == "prompt") && params.contains("virtual_tokens")) {
      label += " p=" + params["virtual_tokens"].dump();
    }
  }
  return label;
}

}  // namespace scion::lineage
