#include "workbench/checkpoint_export.h"

#include <unistd.h>

#include <fstream>
#include <map>
#include <vector>

#include <nlohmann/json.hpp>

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

}  // namespace

Result<CheckpointExport> export_checkpoint(lineage::LineageStore& store,
                                           const ResolvedVersion& version, bool own_only,
                                           const std::filesystem::path& file) {
  const std::string& model = version.model;
  auto params = store.load_parameters(model, version.recipe_hash);
  if (!params.is_ok()) return params.status();
  auto metadata = lineage_metadata(store, version, own_only);
  if (!metadata.is_ok()) return metadata.status();
  std::vector<lineage::SafetensorsTensor> tensors;
  CheckpointExport out;
  for (const auto& [name, p] : *params) {
    if (own_only && p.introduced_by != model) continue;
    tensors.push_back({name, p.dtype, p.shape, p.bytes});
    out.bytes += static_cast<std::int64_t>(p.bytes.size());
  }
  if (tensors.empty())
    return not_found("model '" + model +
                     "' has no parameters of its own to export; drop --own-only to export all "
                     "of them");
  SCION_RETURN_IF_ERROR(lineage::write_safetensors(store.env(), file, tensors, *metadata));
  out.tensors = static_cast<std::int64_t>(tensors.size());
  return out;
}

std::filesystem::path stdout_staging_file() {
  return std::filesystem::temp_directory_path() /
         ("scion-export-" + std::to_string(getpid()) + ".safetensors");
}

Status move_file_to_stream(const std::filesystem::path& file, std::ostream& out) {
  std::ifstream in(file, std::ios::binary);
  out << in.rdbuf();
  out.flush();
  std::error_code ignored;
  std::filesystem::remove(file, ignored);
  if (!in || !out) return io_error("writing the checkpoint to stdout failed (closed pipe?)");
  return Status::ok();
}

}  // namespace scion::workbench
