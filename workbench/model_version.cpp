#include "workbench/model_version.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <vector>

#include "spec/recipe_hash.h"
#include "workbench/model_lookup.h"

namespace scion::workbench {
namespace {

// "lora@12 (3fa9c2e1b0d4) current, lora@7 (8b1c0e2d9a6f)": what a message offers instead.
std::string version_list(const std::vector<lineage::StoredVersion>& versions) {
  std::string out;
  for (const lineage::StoredVersion& v : versions) {
    if (!out.empty()) out += ", ";
    out += v.model + "@" + (v.run ? std::to_string(*v.run) + " (" : "") +
           v.recipe_hash.substr(0, 12) + (v.run ? ")" : "") + (v.current ? " current" : "");
  }
  return out.empty() ? "none" : out;
}

ResolvedVersion resolved(const lineage::StoredVersion& v) {
  return {.model = v.model, .recipe_hash = v.recipe_hash, .run = v.run, .current = v.current};
}

std::optional<std::int64_t> run_number(const std::string& text) {
  std::int64_t id = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), id);
  if (ec != std::errc() || end != text.data() + text.size() || id <= 0) return std::nullopt;
  return id;
}

bool is_hex_prefix(const std::string& text) {
  return text.size() >= 4 && text.size() <= 64 && std::all_of(text.begin(), text.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

Result<ResolvedVersion> by_prefix(const ModelRef& ref,
                                  const std::vector<lineage::StoredVersion>& versions) {
  std::vector<const lineage::StoredVersion*> matches;
  for (const lineage::StoredVersion& v : versions)
    if (v.recipe_hash.starts_with(ref.version)) matches.push_back(&v);
  if (matches.size() == 1) return resolved(*matches.front());
  if (matches.empty())
    return not_found(
        fmt::format("'{}' has no version whose recipe hash starts with '{}'; its "
                    "versions: {}",
                    ref.model, ref.version, version_list(versions)));
  return invalid_argument(
      fmt::format("'{}' matches {} versions of '{}'; give more digits of the "
                  "recipe hash (its versions: {})",
                  ref.text(), matches.size(), ref.model, version_list(versions)));
}

// `MODEL@N`: the version run N made, restored or tested; nullopt when the model has no
// run N (the digits may then be a hash prefix).
Result<std::optional<ResolvedVersion>> by_run(lineage::LineageStore& store, const ModelRef& ref,
                                              std::int64_t id,
                                              const std::vector<lineage::StoredVersion>& versions) {
  auto runs = store.runs(ref.model, 0);
  if (!runs) return runs.status();
  const auto run = std::find_if(runs->begin(), runs->end(),
                                [&](const lineage::RunRecord& r) { return r.id == id; });
  if (run == runs->end()) return std::optional<ResolvedVersion>();
  for (const lineage::StoredVersion& v : versions)
    if (v.recipe_hash == run->recipe_hash) {
      ResolvedVersion found = resolved(v);
      found.named_run = id;
      return std::optional<ResolvedVersion>(found);
    }
  if (run->status == lineage::RunStatus::kFinished)
    return not_found(fmt::format(
        "the version run {} of '{}' ({} run) stored was removed by `scion gc --keep`; its "
        "versions now: {}. To keep versions through gc, tag the spec version they belong to "
        "(`scion tag NAME`) or keep more spec versions (`scion gc --keep N` with a larger N)",
        id, ref.model, lineage::run_kind_name(run->kind), version_list(versions)));
  return not_found(
      fmt::format("run {} of '{}' ({} run, {}) left no stored version; its "
                  "versions: {}",
                  id, ref.model, lineage::run_kind_name(run->kind),
                  lineage::run_status_name(run->status), version_list(versions)));
}

spec::Model* mutable_model(spec::Workspace& ws, const std::string& name) {
  for (spec::Model& m : ws.models)
    if (m.name == name) return &m;
  return nullptr;
}

// The canonical recipe the run that made `version` recorded.
Result<nlohmann::json> recorded_recipe(lineage::LineageStore& store,
                                       const lineage::StoredVersion& version) {
  const std::string label = version.model + "@" + version.recipe_hash.substr(0, 12);
  if (!version.run)
    return invalid_argument("'" + label + "' was stored before scion kept the recipe of each " +
                            "version, so it cannot run with another recipe in the spec");
  auto runs = store.runs(version.model, 0);
  if (!runs) return runs.status();
  for (const lineage::RunRecord& r : *runs)
    if (r.id == *version.run) return r.hyperparameters;
  return corruption("run " + std::to_string(*version.run) + " that made '" + label +
                    "' is not in the store; run `scion fsck`");
}

// Points `m`'s training at its data as the version recorded it: the label names and their
// order, the fields read and the digest (a base classifies into its data's labels, so an
// old version answers with its own, never with today's spec's). The spec's dataset stays
// as it is for the other models: the version gets a copy named "<dataset>@<recipe>".
void take_recorded_data(spec::Workspace& ws, spec::Model& m, const lineage::StoredVersion& version,
                        const nlohmann::json& recipe) {
  if (!m.training || !recipe.contains("train")) return;
  const nlohmann::json data = recipe["train"].value("data", nlohmann::json());
  const spec::Dataset* spec_data = ws.find_dataset(m.training->dataset);
  if (!data.is_object() || spec_data == nullptr) return;
  spec::Dataset recorded = *spec_data;
  recorded.name = spec_data->name + "@" + version.recipe_hash.substr(0, 12);
  recorded.labels = data.value("labels", recorded.labels);
  recorded.text_field = data.value("text_field", recorded.text_field);
  recorded.label_field = data.value("label_field", recorded.label_field);
  recorded.digest = data.value("digest", recorded.digest);
  m.training->dataset = recorded.name;
  if (ws.find_dataset(recorded.name) == nullptr) ws.datasets.push_back(std::move(recorded));
}

// `recipe[key]` as two recipes' are compared: an imported folder's tokenizer by its file
// name alone (older recipes hold the folder as the spec spelled it; the import digest
// covers the file's bytes either way).
nlohmann::json comparable(const nlohmann::json& recipe, const char* key) {
  nlohmann::json value = recipe.value(key, nlohmann::json());
  if (std::string(key) == "architecture" && recipe.contains("import_digest") &&
      value.contains("tokenizer") && value["tokenizer"].contains("vocab_file") &&
      value["tokenizer"]["vocab_file"].is_string())
    value["tokenizer"]["vocab_file"] =
        std::filesystem::path(value["tokenizer"]["vocab_file"].get<std::string>())
            .filename()
            .string();
  return value;
}

// Sets `m` (a model of `ws`) to the recipe `version` was made with. `spec_recipe` is the
// spec's own.
Status take_recipe(spec::Workspace& ws, spec::Model& m, const lineage::StoredVersion& version,
                   const nlohmann::json& recipe, const nlohmann::json& spec_recipe) {
  const std::string label = m.name + "@" + version.recipe_hash.substr(0, 12);
  for (const char* key : {"architecture", "import_digest"})
    if (comparable(recipe, key) != comparable(spec_recipe, key))
      return invalid_argument(
          "'" + label + "' was made with another " +
          (std::string(key) == "architecture" ? "architecture" : "imported checkpoint") +
          " than the spec declares for '" + m.name + "', so it cannot run with this spec");
  if (!m.is_base()) {
    auto adaptation = spec::adaptation_from_recipe(recipe.value("adapt", nlohmann::json()));
    if (!adaptation)
      return corruption("the recorded recipe of '" + label + "' has no readable adaptation");
    m.adaptation = std::move(*adaptation);
  }
  m.freeze = recipe.value("freeze", std::vector<std::string>{});
  m.unfreeze = recipe.value("unfreeze", std::vector<std::string>{});
  if (m.training && recipe.contains("train") && recipe["train"].contains("objective"))
    m.training->objective = static_cast<spec::Objective>(recipe["train"]["objective"].get<int>());
  take_recorded_data(ws, m, version, recipe);
  m.recipe_hash = version.recipe_hash;
  return Status::ok();
}

}  // namespace

Result<ModelRef> parse_model_ref(const std::string& text) {
  const std::size_t at = text.find('@');
  ModelRef ref{.model = text.substr(0, at),
               .version = at == std::string::npos ? "" : text.substr(at + 1)};
  SCION_RETURN_IF_ERROR(check_model_name(ref.model));
  if (at != std::string::npos && ref.version.empty())
    return invalid_argument(fmt::format(
        "'{}' names no version after '@': write {}@N (a run) or {}@<recipe hash prefix>; "
        "`scion lineage versions {}` lists them",
        text, ref.model, ref.model, ref.model));
  return ref;
}

Result<ResolvedVersion> resolve_version(lineage::LineageStore& store, const ModelRef& ref) {
  if (auto model = find_stored_model(store, ref.model); !model) return model.status();
  auto versions = store.versions(ref.model);
  if (!versions) return versions.status();
  if (versions->empty())
    return not_found("'" + ref.model + "' has no stored version; run `scion run` first");
  if (ref.version.empty()) {
    for (const lineage::StoredVersion& v : *versions)
      if (v.current) return resolved(v);
    return not_found("'" + ref.model + "' has no current version; run `scion run` first");
  }
  if (auto id = run_number(ref.version)) {
    auto found = by_run(store, ref, *id, *versions);
    if (!found) return found.status();
    if (found->has_value()) return **found;
    if (!is_hex_prefix(ref.version))
      return not_found(fmt::format("'{}' has no run {}; its versions: {}", ref.model, *id,
                                   version_list(*versions)));
  }
  if (!is_hex_prefix(ref.version))
    return invalid_argument(fmt::format(
        "'{}': '{}' is neither a run number nor a recipe hash prefix (4 or more hex digits); "
        "`scion lineage versions {}` lists the versions",
        ref.text(), ref.version, ref.model));
  return by_prefix(ref, *versions);
}

Result<ResolvedVersion> resolve_version(lineage::LineageStore& store, const std::string& text) {
  auto ref = parse_model_ref(text);
  if (!ref) return ref.status();
  return resolve_version(store, *ref);
}

Result<spec::Workspace> workspace_at(const spec::Workspace& ws, lineage::LineageStore& store,
                                     const ResolvedVersion& version) {
  spec::Workspace out = ws;
  std::string model = version.model, recipe_hash = version.recipe_hash;
  for (;;) {
    spec::Model* m = mutable_model(out, model);
    if (m == nullptr)
      return not_found("'" + model + "' is not in the spec " + ws.spec_path.string() +
                       ", so its stored versions cannot run here");
    // Equal recipe hashes mean equal ancestries, since a recipe covers its parent's.
    if (m->recipe_hash == recipe_hash) return out;
    auto stored = store.find_version(model, recipe_hash);
    if (!stored) return stored.status();
    if (!stored->has_value())
      return not_found("the store holds no version of '" + model + "' for recipe " +
                       recipe_hash.substr(0, 12) + " (removed by `scion gc --keep`?)");
    const lineage::StoredVersion& v = **stored;
    auto recipe = recorded_recipe(store, v);
    if (!recipe) return recipe.status();
    SCION_RETURN_IF_ERROR(
        take_recipe(out, *m, v, *recipe, spec::canonical_recipe(ws, *ws.find_model(model))));
    if (m->is_base()) return out;
    if (v.parent != m->from || !v.parent_recipe_hash)
      return invalid_argument(fmt::format(
          "'{}@{}' was made from {}, but the spec adapts '{}' from '{}'; it cannot run here", model,
          recipe_hash.substr(0, 12),
          v.parent_recipe_hash ? "'" + v.parent + "'" : "a version of its parent no longer stored",
          model, m->from));
    model = m->from;
    recipe_hash = *v.parent_recipe_hash;
  }
}

Result<std::vector<lineage::StoredModel>> version_ancestry(lineage::LineageStore& store,
                                                           const ResolvedVersion& version) {
  std::vector<lineage::StoredModel> chain;
  std::string model = version.model, recipe_hash = version.recipe_hash;
  for (std::size_t depth = 0; depth < 1000; ++depth) {  // parent links cannot cycle (fsck)
    auto at = store.model_at(model, recipe_hash);
    if (!at.is_ok()) return at.status();
    chain.push_back(*at);
    if (at->parent.empty()) break;
    auto made_from = store.find_version(model, recipe_hash);
    if (!made_from.is_ok()) return made_from.status();
    std::optional<std::string> parent_recipe = (*made_from)->parent_recipe_hash;
    if (!parent_recipe) {
      auto parent = find_stored_model(store, at->parent);
      if (!parent.is_ok()) return parent.status();
      if (!parent->recipe_hash) break;
      parent_recipe = parent->recipe_hash;
    }
    model = at->parent;
    recipe_hash = *parent_recipe;
  }
  return chain;
}

}  // namespace scion::workbench
