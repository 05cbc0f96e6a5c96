// MLflow's file-store layout for the store's training runs (workbench/mlflow_export.h).
// The layout is MLflow's FileStore (mlflow/store/tracking/file_store.py): experiment and run
// meta.yaml files, and one file per param, tag and metric.
#include "workbench/mlflow_export.h"

#include <fmt/format.h>

#include <ctime>
#include <fstream>
#include <map>

#include "lineage/spec_records.h"
#include "spec/file_digest.h"

namespace scion::workbench {
namespace {

namespace fs = std::filesystem;

constexpr const char* kExperimentId = "1";

// "2026-11-24T03:00:00.123Z" -> milliseconds since the epoch; 0 when unreadable.
std::int64_t epoch_millis(const std::string& iso) {
  std::tm tm{};
  int millis = 0;
  if (std::sscanf(iso.c_str(), "%4d-%2d-%2dT%2d:%2d:%2d.%3d", &tm.tm_year, &tm.tm_mon, &tm.tm_mday,
                  &tm.tm_hour, &tm.tm_min, &tm.tm_sec, &millis) < 6)
    return 0;
  tm.tm_year -= 1900;
  tm.tm_mon -= 1;
  return static_cast<std::int64_t>(timegm(&tm)) * 1000 + millis;
}

// A YAML single-quoted scalar.
std::string quoted(const std::string& text) {
  std::string out = "'";
  for (char c : text) out += c == '\'' ? std::string("''") : std::string(1, c);
  return out + "'";
}

// MLflow's RunStatus: RUNNING 1, FINISHED 3, FAILED 4, KILLED 5.
int mlflow_status(lineage::RunStatus status) {
  switch (status) {
    case lineage::RunStatus::kRunning:
      return 1;
    case lineage::RunStatus::kFinished:
      return 3;
    case lineage::RunStatus::kFailed:
    case lineage::RunStatus::kDiverged:
      return 4;
    case lineage::RunStatus::kInterrupted:
    case lineage::RunStatus::kAbandoned:
      return 5;
  }
  return 4;
}

// 32 hex digits, as MLflow's run ids, derived from what identifies the run in the store.
std::string run_id_for(const lineage::RunRecord& run) {
  return spec::sha256_hex(fmt::format("scion run {} {} {}", run.id, run.model, run.started_at))
      .substr(0, 32);
}

// MLflow keys may hold letters, digits, '_', '-', '.', ' ' and '/'.
std::string key_of(std::string_view name) {
  std::string out;
  for (char c : name)
    out += (std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.' ||
            c == ' ' || c == '/')
               ? c
               : '_';
  return out;
}

// {"optimizer": {"lr": 0.001}} -> "optimizer.lr" = "0.001"; lists stay JSON.
void flatten(const nlohmann::json& value, const std::string& prefix,
             std::map<std::string, std::string>& out) {
  if (value.is_object() && !value.empty()) {
    for (const auto& [k, v] : value.items()) flatten(v, prefix.empty() ? k : prefix + "." + k, out);
    return;
  }
  if (prefix.empty()) return;
  out[key_of(prefix)] = value.is_string() ? value.get<std::string>() : value.dump();
}

class Writer {
 public:
  Status write(const fs::path& path, const std::string& text) {
    std::error_code ec;
    fs::create_directories(path.parent_path(), ec);
    if (ec)
      return io_error(
          fmt::format("cannot create '{}': {}", path.parent_path().string(), ec.message()));
    std::ofstream out(path, std::ios::binary);
    out << text;
    out.close();
    if (!out)
      return io_error(
          fmt::format("cannot write '{}'; check permissions and free space", path.string()));
    return Status::ok();
  }
};

std::string experiment_meta(const fs::path& root, const std::string& id, const std::string& name,
                            std::int64_t time) {
  return fmt::format(
      "artifact_location: {}\ncreation_time: {}\nexperiment_id: {}\nlast_update_time: {}\n"
      "lifecycle_stage: active\nname: {}\n",
      quoted("file://" + (root / id).string()), time, quoted(id), time, quoted(name));
}

std::string run_meta(const fs::path& experiment_dir, const std::string& run_id,
                     const std::string& run_name, const lineage::RunRecord& run) {
  const std::int64_t start = epoch_millis(run.started_at);
  const std::string end = run.finished_at ? std::to_string(epoch_millis(*run.finished_at)) : "null";
  return fmt::format(
      "artifact_uri: {}\nend_time: {}\nentry_point_name: ''\nexperiment_id: {}\n"
      "lifecycle_stage: active\nrun_id: {}\nrun_name: {}\nrun_uuid: {}\nsource_name: ''\n"
      "source_type: 4\nsource_version: ''\nstart_time: {}\nstatus: {}\ntags: []\n"
      "user_id: {}\n",
      quoted("file://" + (experiment_dir / run_id / "artifacts").string()), end,
      quoted(kExperimentId), run_id, quoted(run_name), run_id, start, mlflow_status(run.status),
      quoted("scion"));
}

class RunExporter {
 public:
  RunExporter(lineage::LineageStore& store, fs::path experiment_dir, MlflowExportSummary& summary)
      : store_(store), dir_(std::move(experiment_dir)), summary_(summary) {}

  Status export_run(const lineage::RunRecord& run, const lineage::StoredModel& model) {
    const std::string id = run_id_for(run);
    const fs::path run_dir = dir_ / id;
    const std::string name =
        fmt::format("{} ({} run {})", run.model, lineage::run_kind_name(run.kind), run.id);
    SCION_RETURN_IF_ERROR(writer_.write(run_dir / "meta.yaml", run_meta(dir_, id, name, run)));
    std::error_code ec;
    fs::create_directories(run_dir / "artifacts", ec);
    if (ec)
      return io_error(fmt::format("cannot create '{}': {}", (run_dir / "artifacts").string(),
                                  ec.message()));
    std::map<std::string, std::string> params;
    flatten(lineage::recipe_in_spec_words(run.hyperparameters), "", params);
    for (const auto& [key, value] : params)
      SCION_RETURN_IF_ERROR(writer_.write(run_dir / "params" / key, value));
    summary_.params += params.size();
    const std::map<std::string, std::string> tags = {
        {"mlflow.runName", name},
        {"mlflow.source.name", "scion"},
        {"scion.host", run.host},
        {"scion.model", run.model},
        {"scion.parent", model.parent},
        {"scion.method", lineage::method_label(model.adaptation)},
        {"scion.recipe_hash", run.recipe_hash},
        {"scion.run", std::to_string(run.id)},
        {"scion.kind", lineage::run_kind_name(run.kind)},
        {"scion.status", lineage::run_status_name(run.status)},
    };
    for (const auto& [key, value] : tags)
      SCION_RETURN_IF_ERROR(writer_.write(run_dir / "tags" / key, value));
    return export_metrics(run, run_dir);
  }

 private:
  Status export_metrics(const lineage::RunRecord& run, const fs::path& run_dir) {
    auto steps = store_.run_metrics(run.id);
    if (!steps) return steps.status();
    const std::int64_t time = epoch_millis(run.started_at);
    std::map<std::string, std::string> series;  // metric -> lines
    const auto add = [&](const std::string& metric, double value, std::int64_t step) {
      series[key_of(metric)] += fmt::format("{} {} {}\n", time, value, step);
      ++summary_.metric_points;
    };
    for (const lineage::StepMetrics& s : *steps) {
      if (s.loss) add("loss", *s.loss, s.step);
      if (s.lr) add("lr", *s.lr, s.step);
      for (const auto& [metric, value] : s.validation) add(metric, value, s.step);
    }
    for (const auto& [metric, lines] : series)
      SCION_RETURN_IF_ERROR(writer_.write(run_dir / "metrics" / metric, lines));
    return Status::ok();
  }

  lineage::LineageStore& store_;
  fs::path dir_;
  MlflowExportSummary& summary_;
  Writer writer_;
};

Status check_target(const fs::path& dir) {
  std::error_code ec;
  if (!fs::exists(dir, ec)) return Status::ok();
  if (!fs::is_directory(dir, ec))
    return invalid_argument(
        fmt::format("'{}' is not a folder; name a new or empty folder", dir.string()));
  if (!fs::is_empty(dir, ec))
    return invalid_argument(fmt::format(
        "'{}' is not empty; export-runs writes a whole MLflow tracking folder: name a new or "
        "empty one",
        dir.string()));
  return Status::ok();
}

}  // namespace

Result<MlflowExportSummary> export_runs_mlflow(lineage::LineageStore& store, const fs::path& target,
                                               const std::string& experiment_name) {
  SCION_RETURN_IF_ERROR(check_target(target));
  const fs::path root = fs::absolute(target).lexically_normal();
  auto models = store.models();
  if (!models) return models.status();
  auto runs = store.runs("", 0);
  if (!runs) return runs.status();
  std::map<std::string, const lineage::StoredModel*> by_name;
  for (const lineage::StoredModel& m : *models) by_name[m.name] = &m;

  MlflowExportSummary summary{.experiment_id = kExperimentId};
  Writer writer;
  const std::int64_t now = epoch_millis(lineage::utc_now());
  SCION_RETURN_IF_ERROR(
      writer.write(root / "0" / "meta.yaml", experiment_meta(root, "0", "Default", now)));
  SCION_RETURN_IF_ERROR(writer.write(root / kExperimentId / "meta.yaml",
                                     experiment_meta(root, kExperimentId, experiment_name, now)));
  RunExporter exporter(store, root / kExperimentId, summary);
  for (const lineage::RunRecord& run : *runs) {
    if (run.kind == lineage::RunKind::kTest) continue;
    const auto model = by_name.find(run.model);
    if (model == by_name.end()) continue;  // a run of a model since removed
    SCION_RETURN_IF_ERROR(exporter.export_run(run, *model->second));
    ++summary.runs;
  }
  return summary;
}

}  // namespace scion::workbench
