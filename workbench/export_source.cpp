#include "workbench/export_source.h"

#include "workbench/model_lookup.h"
#include "workbench/model_version.h"

namespace scion::workbench {
namespace {

// The spec's recipe of `name` is the one stored, or the error that says what to do.
Status check_current(lineage::LineageStore& store, const std::string& name,
                     const std::string& recipe_hash) {
  if (auto stored = find_stored_model(store, name); !stored.is_ok()) return stored.status();
  auto kept = store.find_version(name, recipe_hash);
  if (!kept.is_ok()) return kept.status();
  if (!kept->has_value())
    return invalid_argument("model '" + name +
                            "' is out of date: the store holds parameters of another recipe; "
                            "run `scion run " +
                            name + "` first, or name a stored version (" + name +
                            "@N; `scion lineage versions " + name + "`)");
  return Status::ok();
}

}  // namespace

Result<ExportSource> export_source(spec::Workspace workspace, lineage::LineageStore& store,
                                   const std::string& named) {
  auto ref = parse_model_ref(named);
  if (!ref.is_ok()) return ref.status();
  const std::string& name = ref->model;
  if (auto model = find_spec_model(workspace, name, ""); !model.is_ok()) return model.status();
  ExportSource out{.workspace = std::move(workspace)};
  std::string recipe_hash = out.workspace.find_model(name)->recipe_hash;
  if (!ref->version.empty()) {
    auto version = resolve_version(store, *ref);
    if (!version.is_ok()) return version.status();
    auto at = workspace_at(out.workspace, store, *version);
    if (!at.is_ok()) return at.status();
    out.workspace = std::move(*at);
    recipe_hash = version->recipe_hash;
  } else {
    SCION_RETURN_IF_ERROR(check_current(store, name, recipe_hash));
  }
  out.model = out.workspace.find_model(name);
  auto params = store.load_parameters(name, recipe_hash);
  if (!params.is_ok()) return params.status();
  out.params = std::move(*params);
  return out;
}

}  // namespace scion::workbench
