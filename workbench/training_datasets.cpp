#include "workbench/training_datasets.h"

#include <fmt/format.h>

#include "runtime/text/tokenizer.h"

namespace scion::workbench {

Result<std::shared_ptr<const data::TokenizedDataset>> TrainingDatasets::rows_for(
    const spec::Model& model, const std::string& name, RunRecorder& recorder) {
  const spec::TrainingSpec& recipe = *model.training;
  const spec::Architecture& arch = ws_.architecture_of(model);
  const int max_length = recipe.max_length > 0 ? recipe.max_length : arch.max_length;
  const std::string key = fmt::format("{}/{}/{}/{}", ws_.ancestry(model).back()->name, name,
                                      static_cast<int>(recipe.objective), max_length);
  if (auto it = loaded_.find(key); it != loaded_.end()) return it->second;
  auto tokenizer = text::make_tokenizer(arch.tokenizer, ws_.root_dir);
  if (!tokenizer) return tokenizer.status();
  const spec::Dataset& dataset = *ws_.find_dataset(name);
  auto data = data::load_tokenized_dataset(dataset, **tokenizer, recipe.objective, max_length);
  if (!data) return data.status();
  SCION_RETURN_IF_ERROR(recorder.record_dataset({dataset.digest, dataset.path.string(),
                                                 static_cast<std::int64_t>((*data)->rows.size()),
                                                 spec::dataset_format_name(dataset.format)}));
  loaded_[key] = *data;
  return *data;
}

}  // namespace scion::workbench
