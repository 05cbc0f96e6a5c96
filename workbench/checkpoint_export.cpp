#include "workbench/checkpoint_export.h"

#include <map>
#include <nlohmann/json.hpp>
#include <vector>

#include "lineage/safetensors.h"

namespace scion::workbench {
namespace {

Result<std::map<std::string, std::string>> lineage_metadata(lineage::LineageStore& store,
                                                            const ResolvedVersion& version,
                                                            bool own_only) {
  auto ancestry = version_ancestry(store, version);
  if (!ancestry.is_ok()) return ancestry.status();
  nlohmann::json chain = nlohmann::json::array();
  for (const lineage::StoredModel& m : *ancestry)
    chain.push_back(
        {{"name", m.name},
         {"recipe_hash", m.recipe_hash ? nlohmann::json(*m.recipe_hash) : nlohmann::json()},
         {"adaptation", m.adaptation}});
  const lineage::StoredModel& self = ancestry->front();
  return std::map<std::string, std::string>{{"format", "pt"},
                                            {"scion.model", self.name},
                                            {"scion.parent", self.parent},
                                            {"scion.recipe_hash", self.recipe_hash.value_or("")},
                                            {"scion.architecture", self.architecture.dump()},
                                            {"scion.lineage", chain.dump()},
                                            {"scion.own_only", own_only ? "true" : "false"},
                                            {"scion.version", SCION_VERSION}};
}

// The tensors of `model` to export, with the lineage metadata, and the loaded parameters
// their bytes point into.
struct PreparedExport {
  lineage::LoadedParameters params;
  std::vector<lineage::SafetensorsTensor> tensors;
  std::map<std::string, std::string> metadata;
  CheckpointExport summary;
};

Result<PreparedExport> prepare_export(lineage::LineageStore& store, const ResolvedVersion& version,
                                      bool own_only) {
  const std::string& model = version.model;
  PreparedExport out;
  auto params = store.load_parameters(model, version.recipe_hash);
  if (!params.is_ok()) return params.status();
  out.params = std::move(*params);
  auto metadata = lineage_metadata(store, version, own_only);
  if (!metadata.is_ok()) return metadata.status();
  out.metadata = std::move(*metadata);
  for (const auto& [name, p] : out.params) {
    if (own_only && p.introduced_by != model) continue;
    out.tensors.push_back({name, p.dtype, p.shape, p.bytes});
    out.summary.bytes += static_cast<std::int64_t>(p.bytes.size());
  }
  if (out.tensors.empty())
    return not_found("model '" + model +
                     "' has no parameters of its own to export; drop --own-only to export all "
                     "of them");
  out.summary.tensors = static_cast<std::int64_t>(out.tensors.size());
  return out;
}

}  // namespace

Result<CheckpointExport> export_checkpoint(lineage::LineageStore& store,
                                           const ResolvedVersion& version, bool own_only,
                                           const std::filesystem::path& file) {
  auto prepared = prepare_export(store, version, own_only);
  if (!prepared.is_ok()) return prepared.status();
  SCION_RETURN_IF_ERROR(
      lineage::write_safetensors(store.env(), file, prepared->tensors, prepared->metadata));
  return prepared->summary;
}

Result<CheckpointExport> stream_checkpoint(lineage::LineageStore& store,
                                           const ResolvedVersion& version, bool own_only,
                                           std::ostream& out) {
  auto prepared = prepare_export(store, version, own_only);
  if (!prepared.is_ok()) return prepared.status();
  lineage::SafetensorsHeader header;
  for (std::span<const std::byte> piece :
       lineage::safetensors_pieces(prepared->tensors, prepared->metadata, header))
    out.write(reinterpret_cast<const char*>(piece.data()),
              static_cast<std::streamsize>(piece.size()));
  out.flush();
  if (!out)
    return io_error(
        "writing the checkpoint to standard output failed (a full disk or a "
        "closed pipe?); the output is incomplete");
  return prepared->summary;
}

}  // namespace scion::workbench
