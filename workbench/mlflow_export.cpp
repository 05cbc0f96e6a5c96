// MLflow's file-store layout for the store's runs (workbench/mlflow_export.h). The layout is
// MLflow's FileStore (mlflow/store/tracking/file_store.py): experiment and run meta.yaml
// files, and one file per param, tag and metric.
#include "workbench/mlflow_export.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <ctime>
#include <map>
#include <optional>
#include <span>
#include <sstream>

#include "base/regular_file.h"
#include "lineage/env.h"
#include "lineage/spec_records.h"
#include "spec/file_digest.h"
#include "spec/spec_json.h"
#include "workbench/checkpoint_export.h"
#include "workbench/model_version.h"
#include "workbench/peft_export.h"

namespace scion::workbench {
namespace {

namespace fs = std::filesystem;

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

// A YAML single-quoted scalar, and back.
std::string yaml_quoted(const std::string& text) {
  std::string out = "'";
  for (char c : text) out += c == '\'' ? std::string("''") : std::string(1, c);
  return out + "'";
}
std::string yaml_unquoted(const std::string& text) {
  if (text.size() < 2 || text.front() != '\'' || text.back() != '\'') return text;
  std::string out;
  for (std::size_t i = 1; i + 1 < text.size(); ++i) {
    out += text[i];
    if (text[i] == '\'' && i + 2 < text.size() && text[i + 1] == '\'') ++i;
  }
  return out;
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

// 32 hex digits, as MLflow's run ids, derived from what identifies the run in the store:
// the same run gets the same id in every export.
std::string run_id_for(const lineage::RunRecord& run) {
  return spec::sha256_hex(fmt::format("scion run {} {} {}", run.id, run.model, run.started_at))
      .substr(0, 32);
}
std::string run_id_for(const lineage::EvalResult& e) {
  return spec::sha256_hex(fmt::format("scion eval {} {} {} {}", e.model, e.model_version,
                                      e.dataset_digest, e.evaluated_at))
      .substr(0, 32);
}

// MLflow keys may hold letters, digits, '_', '-', '.', ' ' and '/'. A key is a file name
// here, so '/' (a folder) and every other byte become "_xHH" (hex), and a '_' that is
// followed by 'x' becomes "_x5F" so that no name reads as an escape: the encoding is
// injective ("a/b" -> "a_x2Fb", "a_b" stays), and names without such bytes stay as they
// are (docs/cli.md, export-runs).
std::string key_of(std::string_view name) {
  std::string out;
  for (std::size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    const bool plain = std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '.' ||
                       c == ' ' || (c == '_' && (i + 1 == name.size() || name[i + 1] != 'x'));
    out += plain ? std::string(1, c) : fmt::format("_x{:02X}", static_cast<unsigned char>(c));
  }
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

// The numeric leaves of an eval result's metrics ("per_class.positive.f1" -> 0.9); the
// per-class list is keyed by each class's label.
void numeric_leaves(const nlohmann::json& value, const std::string& prefix,
                    std::map<std::string, double>& out) {
  if (value.is_number()) {
    out[key_of(prefix)] = value.get<double>();
  } else if (value.is_object()) {
    for (const auto& [k, v] : value.items())
      numeric_leaves(v, prefix.empty() ? k : prefix + "." + k, out);
  } else if (value.is_array() && prefix == "per_class") {
    for (const nlohmann::json& c : value)
      if (c.is_object() && c.contains("label") && c["label"].is_string())
        numeric_leaves(c, prefix + "." + c["label"].get<std::string>(), out);
  }
}

// Every file goes through the write guard: its folders below the export root are made
// without following links (a link planted in an earlier export's folder is refused), and
// the file is written to a temporary name and renamed over its own, so a link planted
// under that name is replaced, never written through.
Status write_file(lineage::Env& env, const fs::path& root, const fs::path& relative,
                  const std::string& text) {
  SCION_RETURN_IF_ERROR(make_folders_below(root, relative.parent_path()));
  const std::span<const std::byte> bytes(reinterpret_cast<const std::byte*>(text.data()),
                                         text.size());
  return lineage::write_file_atomically(env, root / relative, std::span(&bytes, 1));
}

std::string experiment_meta(const fs::path& root, const std::string& id, const std::string& name,
                            std::int64_t time) {
  return fmt::format(
      "artifact_location: {}\ncreation_time: {}\nexperiment_id: {}\nlast_update_time: {}\n"
      "lifecycle_stage: active\nname: {}\n",
      yaml_quoted("file://" + (root / id).string()), time, yaml_quoted(id), time,
      yaml_quoted(name));
}

// One MLflow run as the file store holds it.
struct MlflowRun {
  std::string id, name;
  std::int64_t start = 0;
  std::optional<std::int64_t> end;
  int status = 3;
  std::map<std::string, std::string> params, tags;
  std::map<std::string, std::string> metrics;  // key -> "<time ms> <value> <step>" lines
};

// DIR as an MLflow root: fresh (missing or empty) or one written before (it has
// 0/meta.yaml); anything else is refused, so that no folder of other files is written into.
Result<bool> check_target(const fs::path& dir) {
  std::error_code ec;
  if (!fs::exists(dir, ec)) return true;
  if (!fs::is_directory(dir, ec))
    return invalid_argument(fmt::format(
        "'{}' is not a folder; name a new folder or an MLflow tracking folder", dir.string()));
  if (fs::is_empty(dir, ec)) return true;
  if (!fs::exists(dir / "0" / "meta.yaml", ec))
    return invalid_argument(fmt::format(
        "'{}' is neither empty nor an MLflow tracking folder (it has no 0/meta.yaml); name a "
        "new folder, or one export-runs wrote before to bring it up to date",
        dir.string()));
  return false;
}

// An experiment's name is one line of meta.yaml, which MLflow and the next export read back
// to find the experiment: a control character (a newline above all) would not read back
// as written, and every export would start a new experiment.
Status check_experiment_name(const std::string& name) {
  if (name.empty())
    return invalid_argument("--experiment: the name is empty; give the experiment a name");
  for (std::size_t i = 0; i < name.size(); ++i) {
    const auto byte = static_cast<unsigned char>(name[i]);
    if (byte < 0x20 || byte == 0x7f)
      return invalid_argument(fmt::format(
          "--experiment: the name holds a control character (byte 0x{:02X} at offset {}), "
          "which an MLflow experiment name cannot hold; give a name on one line without "
          "control characters",
          byte, i));
  }
  return Status::ok();
}

// The id of the experiment called `name` in `root`, or the next free one.
std::string experiment_id(const fs::path& root, const std::string& name) {
  std::int64_t highest = 0;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(root, ec)) {
    const std::string id = entry.path().filename().string();
    std::int64_t number = 0;
    const auto [end, error] = std::from_chars(id.data(), id.data() + id.size(), number);
    if (error != std::errc() || end != id.data() + id.size()) continue;
    highest = std::max(highest, number);
    // Read only when a regular file: a fifo planted there would block the export.
    auto meta = read_regular_file(entry.path() / "meta.yaml", FollowLinks::kNo);
    if (!meta) continue;
    std::istringstream lines(*meta);
    for (std::string line; std::getline(lines, line);)
      if (line.starts_with("name: ") && yaml_unquoted(line.substr(6)) == name) return id;
  }
  return std::to_string(highest + 1);
}

class MirrorWriter {
 public:
  MirrorWriter(lineage::LineageStore& store, const spec::Workspace* ws, fs::path root,
               std::string experiment_id, MlflowExportSummary& summary)
      : store_(store),
        ws_(ws),
        root_(std::move(root)),
        dir_(root_ / experiment_id),
        experiment_id_(std::move(experiment_id)),
        summary_(summary) {}

  Status write(const MlflowRun& run) {
    const fs::path run_dir = dir_ / run.id;
    const fs::path relative = fs::path(experiment_id_) / run.id;
    std::error_code ec;
    if (!fs::exists(run_dir, ec)) ++summary_.new_runs;
    ++summary_.runs;
    const std::string end = run.end ? std::to_string(*run.end) : "null";
    SCION_RETURN_IF_ERROR(write_file(
        store_.env(), root_, relative / "meta.yaml",
        fmt::format("artifact_uri: {}\nend_time: {}\nentry_point_name: ''\nexperiment_id: {}\n"
                    "lifecycle_stage: active\nrun_id: {}\nrun_name: {}\nrun_uuid: {}\n"
                    "source_name: ''\nsource_type: 4\nsource_version: ''\nstart_time: {}\n"
                    "status: {}\ntags: []\nuser_id: {}\n",
                    yaml_quoted("file://" + (run_dir / "artifacts").string()), end,
                    yaml_quoted(experiment_id_), run.id, yaml_quoted(run.name), run.id, run.start,
                    run.status, yaml_quoted("scion"))));
    // MLflow reads a folder as a run only when all four are there, empty or not.
    for (const char* folder : {"artifacts", "metrics", "params", "tags"})
      SCION_RETURN_IF_ERROR(make_folders_below(root_, relative / folder));
    for (const auto& [key, value] : run.params)
      SCION_RETURN_IF_ERROR(write_file(store_.env(), root_, relative / "params" / key, value));
    summary_.params += run.params.size();
    for (const auto& [key, value] : run.tags)
      SCION_RETURN_IF_ERROR(write_file(store_.env(), root_, relative / "tags" / key, value));
    for (const auto& [key, lines] : run.metrics) {
      SCION_RETURN_IF_ERROR(write_file(store_.env(), root_, relative / "metrics" / key, lines));
      summary_.metric_points +=
          static_cast<std::size_t>(std::count(lines.begin(), lines.end(), '\n'));
    }
    return Status::ok();
  }

  // The version `run` made, as artifacts: its own tensors, and its PEFT adapter folder
  // where scion exports one alone. Each is written once: a version never changes.
  Status write_artifacts(const lineage::RunRecord& run, const std::string& id) {
    if (run.kind != lineage::RunKind::kTrain && run.kind != lineage::RunKind::kAdapt)
      return Status::ok();
    auto version = store_.find_version(run.model, run.recipe_hash);
    if (!version) return version.status();
    if (!version->has_value() || (*version)->run != run.id) return Status::ok();
    const ResolvedVersion made{.model = run.model, .recipe_hash = run.recipe_hash, .run = run.id};
    SCION_RETURN_IF_ERROR(make_folders_below(root_, fs::path(experiment_id_) / id / "artifacts"));
    const fs::path artifacts = dir_ / id / "artifacts";
    const fs::path own = artifacts / (run.model + ".safetensors");
    std::error_code ec;
    if (!fs::exists(own, ec)) {
      auto written = export_checkpoint(store_, made, /*own_only=*/true, own);
      if (written)
        ++summary_.artifacts;
      else if (written.status().code() != StatusCode::kNotFound)
        return written.status();
    }
    const fs::path peft = artifacts / "peft";
    if (ws_ == nullptr || fs::exists(peft, ec) || !ws_->find_model(run.model) ||
        ws_->find_model(run.model)->is_base())
      return Status::ok();
    // Only versions that run in this spec, and only adapters without a merged base.
    auto at = workspace_at(*ws_, store_, made);
    if (!at) return Status::ok();
    auto params = store_.load_parameters(run.model, run.recipe_hash);
    if (!params) return params.status();
    auto exported = peft_export(*at, *at->find_model(run.model), *params, peft);
    if (!exported || exported->merged_base) return Status::ok();
    SCION_RETURN_IF_ERROR(write_peft_export(store_.env(), peft, *exported));
    ++summary_.artifacts;
    return Status::ok();
  }

 private:
  lineage::LineageStore& store_;
  const spec::Workspace* ws_;
  fs::path root_;  // the export folder: no write follows a link below it
  fs::path dir_;
  std::string experiment_id_;
  MlflowExportSummary& summary_;
};

// What every run of a model is tagged with.
std::map<std::string, std::string> model_tags(const lineage::StoredModel& model,
                                              const std::string& name) {
  return {{"mlflow.runName", name},
          {"mlflow.source.name", "scion"},
          {"scion.model", model.name},
          {"scion.parent", model.parent},
          {"scion.method", lineage::method_label(model.adaptation)}};
}

// The run that made `model`'s version `recipe_hash`, as an MLflow run id; "" if unknown.
Result<std::string> maker_of(lineage::LineageStore& store, const std::string& model,
                             const std::string& recipe_hash,
                             const std::map<std::int64_t, const lineage::RunRecord*>& runs) {
  auto version = store.find_version(model, recipe_hash);
  if (!version) return version.status();
  if (!version->has_value() || !(*version)->run) return std::string();
  auto it = runs.find(*(*version)->run);
  return it == runs.end() ? std::string() : run_id_for(*it->second);
}

Result<MlflowRun> training_run(lineage::LineageStore& store, const lineage::RunRecord& run,
                               const lineage::StoredModel& model) {
  MlflowRun out{
      .id = run_id_for(run),
      .name = fmt::format("{} ({} run {})", run.model, lineage::run_kind_name(run.kind), run.id),
      .start = epoch_millis(run.started_at),
      .status = mlflow_status(run.status)};
  if (run.finished_at) out.end = epoch_millis(*run.finished_at);
  flatten(spec::in_spec_words(run.hyperparameters), "", out.params);
  out.tags = model_tags(model, out.name);
  out.tags["scion.host"] = run.host;
  out.tags["scion.recipe_hash"] = run.recipe_hash;
  out.tags["scion.run"] = std::to_string(run.id);
  out.tags["scion.kind"] = lineage::run_kind_name(run.kind);
  out.tags["scion.status"] = lineage::run_status_name(run.status);
  auto steps = store.run_metrics(run.id);
  if (!steps) return steps.status();
  for (const lineage::StepMetrics& s : *steps) {
    const std::int64_t time = s.recorded_at.empty() ? out.start : epoch_millis(s.recorded_at);
    const auto add = [&](const std::string& metric, double value) {
      out.metrics[key_of(metric)] += fmt::format("{} {} {}\n", time, value, s.step);
    };
    if (s.loss) add("loss", *s.loss);
    if (s.lr) add("lr", *s.lr);
    for (const auto& [metric, value] : s.validation) add(metric, value);
  }
  return out;
}

// A test run: each test's failure rate and case count, each assertion's violations.
Result<MlflowRun> test_run(lineage::LineageStore& store, const lineage::RunRecord& run,
                           const lineage::StoredModel& model, const std::string& parent) {
  auto out = training_run(store, run, model);
  if (!out) return out.status();
  out->params.clear();
  if (!parent.empty()) out->tags["mlflow.parentRunId"] = parent;
  const std::int64_t time = out->end.value_or(out->start);
  auto rows = store.test_results(run.model, run.recipe_hash);
  if (!rows) return rows.status();
  std::map<std::string, std::pair<std::int64_t, std::int64_t>> counts;  // test -> failed, cases
  for (const lineage::TestCaseResult& r : *rows)
    if (r.run_id == run.id) {
      counts[r.test].second++;
      counts[r.test].first += r.passed ? 0 : 1;
    }
  for (const auto& [test, c] : counts) {
    out->metrics["failure_rate." + key_of(test)] =
        fmt::format("{} {} 0\n", time, double(c.first) / double(c.second));
    out->metrics["cases." + key_of(test)] = fmt::format("{} {} 0\n", time, c.second);
  }
  auto outcomes = store.test_outcomes(run.id);
  if (!outcomes) return outcomes.status();
  std::map<std::string, std::int64_t> violations;
  for (const lineage::TestOutcome& o : *outcomes)
    if (o.key.kind == "assertion") violations[o.key.name] = o.failed;
  auto flagged = store.assertion_violations(run.model, run.recipe_hash);
  if (!flagged) return flagged.status();
  if (outcomes->empty())  // a run from before outcomes: count its rows
    for (const lineage::AssertionViolation& v : *flagged)
      if (v.run_id == run.id) violations[v.assertion]++;
  for (const auto& [assertion, n] : violations)
    out->metrics["violations." + key_of(assertion)] = fmt::format("{} {} 0\n", time, n);
  return out;
}

MlflowRun eval_run(const lineage::EvalResult& e, const lineage::StoredModel& model,
                   const std::string& parent) {
  const std::int64_t time = epoch_millis(e.evaluated_at);
  MlflowRun out{.id = run_id_for(e),
                .name = fmt::format("{} (eval on {})", e.model, e.dataset),
                .start = time,
                .end = time};
  out.tags = model_tags(model, out.name);
  out.tags["scion.kind"] = "eval";
  out.tags["scion.status"] = "finished";
  out.tags["scion.recipe_hash"] = e.model_version;
  out.tags["scion.dataset"] = e.dataset;
  out.tags["scion.dataset_digest"] = e.dataset_digest;
  if (!parent.empty()) out.tags["mlflow.parentRunId"] = parent;
  out.params["dataset"] = e.dataset;
  out.params["rows"] = std::to_string(e.rows);
  std::map<std::string, double> metrics;
  numeric_leaves(e.metrics, "", metrics);
  for (const auto& [key, value] : metrics) out.metrics[key] = fmt::format("{} {} 0\n", time, value);
  return out;
}

}  // namespace

Result<MlflowExportSummary> export_runs_mlflow(lineage::LineageStore& store,
                                               const spec::Workspace* ws, const fs::path& target,
                                               const std::string& experiment_name) {
  SCION_RETURN_IF_ERROR(check_experiment_name(experiment_name));
  auto fresh = check_target(target);
  if (!fresh) return fresh.status();
  const fs::path root = fs::absolute(target).lexically_normal();
  auto models = store.models();
  if (!models) return models.status();
  auto runs = store.runs("", 0);
  if (!runs) return runs.status();
  std::map<std::string, const lineage::StoredModel*> by_name;
  for (const lineage::StoredModel& m : *models) by_name[m.name] = &m;
  std::map<std::int64_t, const lineage::RunRecord*> by_id;
  for (const lineage::RunRecord& r : *runs) by_id[r.id] = &r;

  MlflowExportSummary summary{.experiment_id = *fresh ? "1" : experiment_id(root, experiment_name)};
  const std::int64_t now = epoch_millis(lineage::utc_now());
  std::error_code ec;
  // Experiments keep their meta.yaml (and creation time) once written.
  for (const auto& [id, name] : {std::pair<std::string, std::string>{"0", "Default"},
                                 {summary.experiment_id, experiment_name}})
    if (!fs::exists(root / id / "meta.yaml", ec))
      SCION_RETURN_IF_ERROR(write_file(store.env(), root, fs::path(id) / "meta.yaml",
                                       experiment_meta(root, id, name, now)));
  MirrorWriter writer(store, ws, root, summary.experiment_id, summary);
  for (auto it = runs->rbegin(); it != runs->rend(); ++it) {  // oldest first
    const lineage::RunRecord& run = *it;
    const auto model = by_name.find(run.model);
    if (model == by_name.end()) continue;  // a run of a model since removed
    if (run.kind == lineage::RunKind::kTest) {
      auto parent = maker_of(store, run.model, run.recipe_hash, by_id);
      if (!parent) return parent.status();
      auto mirrored = test_run(store, run, *model->second, *parent);
      if (!mirrored) return mirrored.status();
      SCION_RETURN_IF_ERROR(writer.write(*mirrored));
      continue;
    }
    auto mirrored = training_run(store, run, *model->second);
    if (!mirrored) return mirrored.status();
    SCION_RETURN_IF_ERROR(writer.write(*mirrored));
    SCION_RETURN_IF_ERROR(writer.write_artifacts(run, mirrored->id));
  }
  for (const lineage::StoredModel& m : *models) {
    auto evaluations = store.eval_results(m.name, "");
    if (!evaluations) return evaluations.status();
    for (const lineage::EvalResult& e : *evaluations) {
      auto parent = maker_of(store, m.name, e.model_version, by_id);
      if (!parent) return parent.status();
      SCION_RETURN_IF_ERROR(writer.write(eval_run(e, m, *parent)));
    }
  }
  return summary;
}

}  // namespace scion::workbench
