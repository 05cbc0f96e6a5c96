#include "workbench/peft_export.h"

namespace scion::workbench {

namespace {

// A refusal of PEFT's layout that also names --format huggingface when that format
// holds this very model (a head-only model, a full fine-tune): the folder transformers
// loads is what the user wanted a PEFT adapter for.
Status with_working_format(const spec::Workspace& ws, const spec::Model& model,
                           const lineage::LoadedParameters& params, const Status& refused) {
  if (refused.code() != StatusCode::kInvalidArgument ||
      refused.message().find("--format huggingface") != std::string::npos ||
      !hf_model_folder(ws, model, params).is_ok())
    return refused;
  return Status(refused.code(), refused.message() +
                                    "; or, as a model folder transformers loads (the trunk with "
                                    "its adaptations merged, and its head), `scion export " +
                                    model.name +
                                    " --format huggingface -o DIR`, which holds this model");
}

}  // namespace

Result<PeftExport> peft_export(const spec::Workspace& ws, const spec::Model& model,
                               const lineage::LoadedParameters& params,
                               const std::filesystem::path& dir) {
  PeftExport out;
  auto adapter = lineage::peft_adapter_files(ws, model, params);
  if (!adapter.is_ok()) return with_working_format(ws, model, params, adapter.status());
  out.adapter = std::move(*adapter);
  const auto chain = ws.ancestry(model);
  const spec::HeadSpec* head = ws.head_of(model);
  if (head) {
    auto config =
        read_config_json(std::filesystem::path(chain.back()->import_path) / "config.json");
    if (!config) return config.status();
    out.adapter.model_config = head_config(std::move(*config), *head, out.adapter.task_class);
  }
  if (chain.size() <= 2) return out;  // over the imported folder itself
  auto base = hf_model_folder(ws, model, params, HfMergeScope::kAncestorsOnly);
  if (!base.is_ok()) return base.status();
  out.merged_base = std::move(*base);
  for (std::size_t i = 1; i + 1 < chain.size(); ++i) out.merged_ancestors.push_back(chain[i]->name);
  // Absolute, so that AutoPeftModel... finds it from any working directory.
  std::error_code ec;
  const std::filesystem::path base_dir = std::filesystem::absolute(dir / kMergedBaseFolder, ec);
  if (ec)
    return io_error("cannot resolve '" + (dir / kMergedBaseFolder).string() + "': " + ec.message());
  out.adapter.config["base_model_name_or_path"] = base_dir.lexically_normal().string();
  return out;
}

Status write_peft_export(lineage::Env& env, const std::filesystem::path& dir,
                         const PeftExport& exported) {
  if (exported.merged_base)
    SCION_RETURN_IF_ERROR(
        write_hf_model_folder(env, dir / kMergedBaseFolder, *exported.merged_base));
  return lineage::write_peft_adapter(env, dir, exported.adapter);
}

}  // namespace scion::workbench
