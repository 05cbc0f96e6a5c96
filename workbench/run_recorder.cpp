#include "workbench/run_recorder.h"

#include <list>
#include <optional>

#include "lineage/spec_records.h"
#include "spec/recipe_hash.h"
#include "workbench/training_outcome.h"

namespace scion::workbench {

Status RunRecorder::record_dataset(const lineage::DatasetRecord& dataset) {
  if (!writer_) return Status::ok();
  runtime::ScopedOpTimer store_time(profile_, runtime::OpClass::kStore);
  return store_.record_dataset(dataset);
}

Result<std::int64_t> RunRecorder::start(const spec::Model& model, lineage::RunKind kind) {
  if (!writer_) return std::int64_t{0};
  lineage::RunStart run{.kind = kind,
                        .recipe_hash = model.recipe_hash,
                        .dataset_digest = ws_.find_dataset(model.training->dataset)->digest,
                        .seed = model.training->seed,
                        .hyperparameters = spec::canonical_recipe(ws_, model)};
  runtime::ScopedOpTimer store_time(profile_, runtime::OpClass::kStore);
  return store_.start_run(lineage::model_record_for(ws_, model), run);
}

Status RunRecorder::record_step(std::int64_t run, lineage::StepMetrics metrics, bool flush_now) {
  if (!writer_) return Status::ok();
  std::vector<lineage::StepMetrics>& buffered = unsaved_[run];
  buffered.push_back(std::move(metrics));
  if (flush_now || buffered.size() >= kMetricsEvery) return flush(run);
  return Status::ok();
}

Status RunRecorder::flush(std::int64_t run) {
  auto it = unsaved_.find(run);
  if (!writer_ || it == unsaved_.end() || it->second.empty()) return Status::ok();
  runtime::ScopedOpTimer store_time(profile_, runtime::OpClass::kStore);
  Status saved = store_.append_metrics(run, it->second);
  it->second.clear();
  return saved;
}

Status RunRecorder::commit(std::int64_t run, const runtime::TrainingJob& job,
                           const std::map<std::string, std::string>& inherited_digests) {
  if (!writer_) return Status::ok();
  runtime::ScopedOpTimer store_time(profile_, runtime::OpClass::kStore);
  std::vector<lineage::ParameterWrite> writes;
  std::list<std::vector<std::byte>> host_values;  // what `writes` point into, where copied
  std::optional<lineage::LoadedParameters> parent;
  for (const runtime::ParameterSpec& p : job.table()) {
    const runtime::Tensor* view = job.parameters().find(p.name);
    lineage::ParameterWrite w;
    w.name = p.name;
    w.shape = p.shape;
    if (view->dtype == runtime::DType::kF32) {
      w.bytes = runtime::host_bytes(job.backend(), *view, host_values.emplace_back());
    } else {
      if (!parent) {
        auto loaded = store_.load_parameters(job.model().from);
        if (!loaded) return loaded.status();
        parent = std::move(*loaded);
      }
      auto it = parent->find(p.name);
      if (it == parent->end())
        return corruption("parameter '" + p.name + "' of '" + job.model().from +
                          "' went missing from the store while '" + job.model().name + "' trained");
      w.bytes = it->second.bytes;
      w.digest = it->second.digest;
    }
    w.trainable = p.trainable;
    w.introduced_by = p.introduced_by;
    if (!p.trainable)
      if (auto it = inherited_digests.find(p.name); it != inherited_digests.end())
        w.digest = it->second;
    writes.push_back(std::move(w));
  }
  return store_.commit_model(run, lineage::model_record_for(ws_, job.model()), writes);
}

Status RunRecorder::record_kept(std::int64_t run, const runtime::KeptValidation& kept) {
  if (!writer_) return Status::ok();
  runtime::ScopedOpTimer store_time(profile_, runtime::OpClass::kStore);
  return store_.record_kept(run, kept_json(kept), kept_message(kept));
}

Status RunRecorder::record_keep_best_unmet(std::int64_t run, const std::string& message) {
  if (!writer_) return Status::ok();
  runtime::ScopedOpTimer store_time(profile_, runtime::OpClass::kStore);
  return store_.record_kept(run, nlohmann::json(), message);
}

Status RunRecorder::finish(std::int64_t run, lineage::RunStatus status,
                           const std::string& message) {
  if (!writer_) return Status::ok();
  runtime::ScopedOpTimer store_time(profile_, runtime::OpClass::kStore);
  return store_.finish_run(run, status, message);
}

}  // namespace scion::workbench
