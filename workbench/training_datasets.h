// TrainingDatasets: the tokenized rows training jobs read, loaded once per command and
// shared by every job that reads the same rows. Rows are per base as well as per dataset,
// objective and length: bases of one family may tokenise differently (two Hugging Face
// folders). Each dataset loaded is recorded in the store (by the rank that writes it).
// Borrows the workspace. Not thread-safe.
#pragma once

#include <map>
#include <memory>
#include <string>

#include "base/status.h"
#include "runtime/data/training_data.h"
#include "spec/workspace.h"
#include "workbench/run_recorder.h"

namespace scion::workbench {

class TrainingDatasets {
 public:
  explicit TrainingDatasets(const spec::Workspace& ws) : ws_(ws) {}

  // The rows of dataset `name` (the model's training data, or its dev set, `validation:`)
  // as `model`'s base tokenizes them for its recipe; the first time, recorded through
  // `recorder`. Errors: the tokenizer's, the data's.
  Result<std::shared_ptr<const data::TokenizedDataset>> rows_for(const spec::Model& model,
                                                                 const std::string& name,
                                                                 RunRecorder& recorder);

 private:
  const spec::Workspace& ws_;
  std::map<std::string, std::shared_ptr<const data::TokenizedDataset>> loaded_;
};

}  // namespace scion::workbench
