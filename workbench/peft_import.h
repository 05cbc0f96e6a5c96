// `scion import --peft DIR --as MODEL`: a PEFT adapter folder (adapter_config.json +
// adapter_model.safetensors, as PEFT saves one or `scion export --format peft` writes it)
// as the parameters of MODEL, a descendant of an imported Hugging Face base that the spec
// declares with one registered method that has a PEFT form (LoRA, (IA)³): a head
// classifier of a BERT base, or a causal LM of a Llama base (lineage::check_peft_import
// says which).
//
// The adapter must fit the declaration (workbench/peft_config_check.h): the peft_type
// and task_type PEFT runs the model as, the method's own keys as its PEFT form checks them
// (LoRA: runtime/adapters/lora/lora_peft.h; what scion does not run is refused, never
// ignored), fan_in_fan_out as the base's weights are laid out, a base_model_name_or_path
// naming the base's folder (the same folder, or one of the same name: a hub id such as
// sentence-transformers/all-MiniLM-L6-v2 ends in it), and exactly the tensors of MODEL's
// own parameters under PEFT's names (lineage/peft_adapter.h), each of the parameter
// table's shape. Every mismatch is listed. The
// inherited parameters are the parent's, as stored. The files' SHA-256 digests go into
// the import run's record.
#pragma once

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "lineage/safetensors.h"
#include "lineage/store.h"
#include "spec/workspace.h"

namespace scion::workbench {

struct PeftImport {
  // MODEL's complete parameter set; bytes borrowed from the members below.
  std::vector<lineage::ParameterWrite> writes;
  std::string adapter_digest;  // SHA-256 of adapter_model.safetensors
  std::string config_digest;   // SHA-256 of adapter_config.json
  std::int64_t own_tensors = 0;  // MODEL's own (from the adapter)
  std::int64_t own_bytes = 0;
  // Tensors holding NaN or infinite values, one line each: the caller refuses them unless
  // told to import them anyway, as for a base (workbench/base_import.h).
  std::vector<std::string> non_finite;

  lineage::MappedSafetensors adapter;
  lineage::LoadedParameters parent;
  std::vector<std::vector<float>> converted;  // F32 copies of F16/BF16/F64 adapter tensors
};

// Errors: kSpecError listing every mismatch (each also in `problems`, for the CLI to print
// one per line), kNotFound for a folder without the adapter's files or a parent not in the
// store, kInvalidArgument for a model PEFT's layout cannot hold.
Result<std::unique_ptr<PeftImport>> read_peft_import(const spec::Workspace& ws,
                                                     const spec::Model& model,
                                                     lineage::LineageStore& store,
                                                     const std::filesystem::path& dir,
                                                     std::vector<std::string>& problems);

}  // namespace scion::workbench
