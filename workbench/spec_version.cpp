#include "workbench/spec_version.h"

#include "spec/names.h"
#include "spec/yaml_tree.h"

namespace scion::workbench {

std::map<std::string, std::string> spec_members(const spec::Workspace& ws) {
  std::map<std::string, std::string> members;
  for (const spec::Model& m : ws.models) members[m.name] = m.recipe_hash;
  return members;
}

Status record_spec_version(const spec::Workspace& ws, lineage::LineageStore& store) {
  auto recorded = store.record_spec_version(ws.spec_path.string(), spec_members(ws));
  return recorded ? Status::ok() : recorded.status();
}

Status tag_spec_version(const spec::Workspace& ws, lineage::LineageStore& store,
                        const std::string& tag) {
  if (const std::string problem = spec::name_problem(tag); !problem.empty())
    return invalid_argument(std::string("'").append(spec::shorten(tag)) +
                            "' is not a tag name: it " + problem +
                            "; a tag follows the rule of model names");
  // Stored at the spec's recipe: any version of it, current or one `scion run` would
  // restore (the spec edited back to an older recipe).
  for (const spec::Model& m : ws.models) {
    auto stored = store.find_version(m.name, m.recipe_hash);
    if (!stored) return stored.status();
    if (!stored->has_value())
      return invalid_argument("'" + m.name + "' is not stored at the spec's recipe, so the spec " +
                              "version cannot be tagged yet; run `scion run` first");
  }
  return store.tag_spec_version(tag, ws.spec_path.string(), spec_members(ws));
}

}  // namespace scion::workbench
