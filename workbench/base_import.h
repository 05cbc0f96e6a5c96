// `scion import FILE|FOLDER --as MODEL`: a pretrained base's parameters, checked tensor by
// tensor against the parameter table the spec implies (runtime/model/parameter_table.h). A
// safetensors file is read as it is; a Hugging Face model folder's tensors are renamed and
// laid out by lineage/hf_checkpoint.h first. Floating-point parameters of any width become
// F32, the dtype the runtime runs. Also the one commit both imports end with
// (commit_import: an `import` run recording where the parameters came from).
#pragma once

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "lineage/hf_checkpoint.h"
#include "lineage/safetensors.h"
#include "lineage/store.h"
#include "spec/workspace.h"

namespace scion::workbench {

struct BaseImport {
  // MODEL's parameters in table order; bytes borrowed from the members below.
  std::vector<lineage::ParameterWrite> writes;
  std::int64_t bytes = 0;
  // Tensors holding NaN or infinite values, one line each ("tensor 'x' has 3 NaN or
  // infinite values"): the caller refuses them or imports them with a warning.
  std::vector<std::string> non_finite;

  lineage::MappedSafetensors file;
  lineage::HfCheckpoint folder;
  std::vector<std::vector<float>> converted;  // F32 copies of the other float dtypes
};

// Errors: kInvalidArgument for a MODEL that is not a base; kSpecError for a folder given
// for a model that does not import one, for a checkpoint whose contents differ from the
// one the model's `import:` declares (its recipe records that one's digest), and for a checkpoint that does not fit the table
// (every missing, extra or misshapen tensor and every non-float one in `problems`, for
// the CLI to print one per line); the readers' errors. `notes`: what a Hugging Face
// folder skips on purpose (buffers, pretraining heads), one line each, also on errors.
Result<std::unique_ptr<BaseImport>> read_base_import(const spec::Workspace& ws,
                                                     const spec::Model& model,
                                                     const std::filesystem::path& path,
                                                     std::vector<std::string>& problems,
                                                     std::vector<std::string>& notes);

// Records MODEL's parameters as an `import` run with `hyperparameters` (where they came
// from), committed or, on failure, finished as failed. The run's id.
Result<std::int64_t> commit_import(lineage::LineageStore& store, const spec::Workspace& ws,
                                   const spec::Model& model,
                                   const std::vector<lineage::ParameterWrite>& writes,
                                   const nlohmann::json& hyperparameters);

}  // namespace scion::workbench
