#include "workbench/group_training.h"

#include <fmt/format.h>

#include <algorithm>

#include "lineage/records.h"
#include "runtime/compute_device.h"
#include "runtime/memory_info.h"
#include "workbench/inherited_parameters.h"
#include "workbench/training_groups.h"

namespace scion::workbench {
namespace {

// "'review-hot' (scion.yaml:40) diverged at step 3: loss is NaN; try a lower learning rate".
std::string divergence_message(const runtime::TrainingJob& job) {
  const spec::Model& model = job.model();
  return fmt::format(
      "'{}' ({}:{}) diverged at step {}: {}; try a lower learning rate (its "
      "optimizer lr is {:g}); nothing of it was stored",
      model.name, model.location.file, model.location.line, job.divergence()->step,
      job.divergence()->what, model.training->optimizer.lr);
}

// A step's metrics as the store records them.
lineage::StepMetrics step_metrics(const runtime::StepReport& r) {
  lineage::StepMetrics metrics;
  metrics.step = r.step;
  metrics.loss = r.loss;
  metrics.lr = r.lr;
  metrics.recorded_at = lineage::utc_now();
  if (r.validation)  // val_loss and the task's other metrics (docs/spec.md)
    metrics.validation.insert(r.validation->metrics.begin(), r.validation->metrics.end());
  return metrics;
}

// bf16 groups hold the trunk weights they run frozen in bf16 (2 bytes a parameter).
runtime::DType frozen_dtype(const runtime::Backend& backend) {
  return backend.precision() == runtime::Precision::kBF16 ? runtime::DType::kBF16
                                                          : runtime::DType::kF32;
}

// A group's step count, steady state (median of the steps after the first) and time to
// its first step, from the trainer's step timings.
void set_step_figures(GroupOutcome& group, const runtime::FamilyTrainer& trainer) {
  const std::vector<runtime::StepTiming>& steps = trainer.step_timings();
  group.steps = static_cast<std::int64_t>(steps.size());
  group.first_step_end_seconds = trainer.first_step_end().value_or(0);
  if (steps.size() < 2) return;
  std::vector<double> seconds, rates;
  for (std::size_t i = 1; i < steps.size(); ++i) {
    seconds.push_back(steps[i].seconds);
    if (steps[i].seconds > 0)
      rates.push_back(static_cast<double>(steps[i].tokens) / steps[i].seconds);
  }
  const auto median = [](std::vector<double> v) {
    if (v.empty()) return 0.0;
    std::sort(v.begin(), v.end());
    return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
  };
  group.steady_step_seconds = median(seconds);
  group.steady_tokens_per_second = median(rates);
}

}  // namespace

GroupTraining::GroupTraining(const GroupSetting& setting, runtime::Backend& backend,
                             std::vector<const spec::Model*> members, lineage::RunKind kind,
                             TrainingOutcome& outcome)
    : setting_(setting),
      backend_(backend),
      members_(std::move(members)),
      kind_(kind),
      outcome_(outcome),
      first_outcome_(outcome.models.size()),
      recorder_(setting.store, setting.ws, setting.writer, setting.profile),
      checkpoints_(setting.store, setting.ws, setting.observer,
                   {.writer = setting.writer,
                    .resume = setting.resume,
                    .quiet = setting.quiet,
                    .profile = setting.profile}),
      start_(Clock::now()),
      pool_(backend, setting.shares, frozen_dtype(backend)),
      inherited_digests_(members_.size()) {
  for (const spec::Model* m : members_) names_.push_back(m->name);
}

GroupTraining::~GroupTraining() = default;

Status GroupTraining::run() {
  // The group's own peak: earlier groups' buffers are freed, but the process's peak
  // would still count them.
  runtime::reset_peak_resident();
  resident_before_ = runtime::resident_bytes().value_or(0);
  if (Status agreed = setting_.comm.agree(set_up()); !agreed.is_ok()) {
    // Best effort, as in summarise: runs this rank started say how they ended.
    for (const auto& [job, run] : run_ids_)
      recorder_.finish(run, lineage::RunStatus::kFailed, agreed.message()).ignore_error();
    return agreed;
  }
  setting_.observer.group_started(names_);
  runtime::FamilyTrainer trainer(backend_,
                                 {.communicator = &setting_.comm, .profile = setting_.profile});
  const Status status = train(trainer);
  summarise(status, trainer);
  return status;
}

ModelOutcome& GroupTraining::outcome_of(const runtime::TrainingJob& job) {
  return outcome_.models[first_outcome_ + member_of_.at(&job)];
}

double GroupTraining::seconds_since_start() const {
  return std::chrono::duration<double>(Clock::now() - start_).count();
}

// ---- set_up ---------------------------------------------------------------------------

Status GroupTraining::set_up() {
  runtime::ScopedOpTimer setup_time(setting_.profile, runtime::OpClass::kSetup);
  // Every member's parameters first: a share unit's group needs all of its members' views.
  std::map<std::string, runtime::ParameterBinding> bindings;
  SCION_RETURN_IF_ERROR(bind_parameters(bindings));
  SCION_RETURN_IF_ERROR(create_share_groups(bindings));
  for (std::size_t i = 0; i < members_.size(); ++i)
    SCION_RETURN_IF_ERROR(create_job(i, bindings.at(members_[i]->name)));
  for (auto& [owner, group] : share_groups_)
    SCION_RETURN_IF_ERROR(checkpoints_.resume_unit(*group));
  for (const auto& job : jobs_) outcome_of(*job).resumed_from = job->steps_done();
  return Status::ok();
}

Status GroupTraining::bind_parameters(std::map<std::string, runtime::ParameterBinding>& bindings) {
  for (std::size_t i = 0; i < members_.size(); ++i) {
    const spec::Model& model = *members_[i];
    auto added = pool_.add_model(setting_.ws, model);
    if (!added) return added.status();
    SCION_RETURN_IF_ERROR(load_inherited(setting_.store, backend_, setting_.ws, model, pool_,
                                         *added, inherited_digests_[i]));
    runtime::initialize_new_parameters(backend_, setting_.ws, model, *added, model.training->seed,
                                       setting_.shares);
    bindings[model.name] = std::move(*added);
  }
  return Status::ok();
}

Status GroupTraining::create_share_groups(
    const std::map<std::string, runtime::ParameterBinding>& bindings) {
  for (const spec::Model* model : members_) {
    if (setting_.shares.shared_by(model->name).empty()) continue;
    const std::vector<const spec::Model*> unit = setting_.ws.training_unit(*model);
    std::unique_ptr<runtime::ShareGroup>& group = share_groups_[unit.front()->name];
    if (group) continue;
    auto created = runtime::ShareGroup::create(unit, setting_.shares, bindings, backend_);
    if (!created) return created.status();
    group = std::move(*created);
  }
  return Status::ok();
}

Status GroupTraining::create_job(std::size_t member, const runtime::ParameterBinding& binding) {
  const spec::Model& model = *members_[member];
  auto data = setting_.datasets.rows_for(model, model.training->dataset, recorder_);
  if (!data) return data.status();
  std::shared_ptr<const data::TokenizedDataset> dev;  // `validation: DATASET`, else none
  if (!model.training->validation.empty()) {
    auto loaded = setting_.datasets.rows_for(model, model.training->validation, recorder_);
    if (!loaded) return loaded.status();
    dev = *loaded;
  }
  runtime::ShareGroup* share = nullptr;
  if (!setting_.shares.shared_by(model.name).empty())
    share = share_groups_.at(setting_.ws.training_unit(model).front()->name).get();
  auto job = runtime::TrainingJob::create(setting_.ws, model, binding, *data, backend_, share, dev);
  if (!job) return job.status();
  if (!share) SCION_RETURN_IF_ERROR(checkpoints_.resume(**job));
  auto run = recorder_.start(model, kind_);
  if (!run) return run.status();
  run_ids_[job->get()] = *run;
  member_of_[job->get()] = member;
  outcome_.models.emplace_back(model.name, OutcomeStatus::kRunning, *run);
  jobs_.push_back(std::move(*job));
  return Status::ok();
}

// ---- train ----------------------------------------------------------------------------

runtime::TrainerCallbacks GroupTraining::callbacks() {
  runtime::TrainerCallbacks callbacks;
  callbacks.on_step = [this](const runtime::StepReport& r) { return on_step(r); };
  callbacks.on_group_step = [this](std::span<const runtime::StepReport> reports) {
    return on_group_step(reports);
  };
  callbacks.on_job_diverged = [this](runtime::TrainingJob& job) { return on_diverged(job); };
  callbacks.on_job_finished = [this](runtime::TrainingJob& job) { return on_finished(job); };
  callbacks.on_note = [this](const std::string& note) {
    if (setting_.writer) setting_.observer.note(note);
  };
  return callbacks;
}

Status GroupTraining::train(runtime::FamilyTrainer& trainer) {
  std::vector<runtime::TrainingJob*> jobs;
  for (auto& job : jobs_) jobs.push_back(job.get());
  training_began_ = Clock::now();
  Status status = trainer.run(jobs, callbacks(), setting_.interrupted);
  // Steps since the last save of a job that stopped early (interrupted, failed).
  for (const auto& job : jobs_)
    if (Status saved = recorder_.flush(run_of(*job)); status.is_ok()) status = saved;
  return status;
}

Status GroupTraining::on_step(const runtime::StepReport& r) {
  // A device failure stops training before its results reach a checkpoint or the store.
  SCION_RETURN_IF_ERROR(runtime::check_backend(backend_, "training"));
  tokens_ += r.tokens;
  ModelOutcome& outcome = outcome_of(*r.job);
  outcome.steps = r.step;
  outcome.final_loss = r.loss;
  if (r.validation) {
    outcome.val_loss = r.validation->loss;
    outcome.val_accuracy = r.validation->metric("val_accuracy");
    outcome.validation = r.validation->metrics;
  }
  setting_.observer.step(r, members_.size());
  auto checkpointed = checkpoints_.save_if_due(r);
  if (!checkpointed) return checkpointed.status();
  return recorder_.record_step(run_of(*r.job), step_metrics(r), *checkpointed);
}

// One progress line per step of a co-batched group: its jobs' losses, its tokens/s and
// an estimate of the time left from its own step rate (set-up excluded).
Status GroupTraining::on_group_step(std::span<const runtime::StepReport> reports) {
  if (members_.size() < 2 || reports.empty()) return Status::ok();
  const GroupProgress progress = progress_of(reports, Clock::now());
  if (setting_.writer) setting_.observer.group_step(progress);
  return Status::ok();
}

GroupProgress GroupTraining::progress_of(std::span<const runtime::StepReport> reports,
                                         Clock::time_point now) {
  GroupProgress progress{.models = names_, .running = reports.size()};
  for (const auto& job : jobs_)
    progress.total_steps = std::max(progress.total_steps, job->total_steps());
  for (const runtime::StepReport& r : reports) progress.step = std::max(progress.step, r.step);
  for (const auto& job : jobs_) {
    const ModelOutcome& o = outcome_of(*job);
    progress.losses.push_back(o.steps > 0 ? std::optional<double>(o.final_loss) : std::nullopt);
  }
  for (const runtime::StepReport& r : reports) progress.mean_loss += r.loss;
  progress.mean_loss /= static_cast<double>(reports.size());
  if (!first_step_at_) {
    first_step_at_ = now;
    first_step_ = progress.step;
  }
  progress.elapsed_seconds = std::chrono::duration<double>(now - start_).count();
  const double training = std::chrono::duration<double>(now - training_began_).count();
  progress.tokens_per_second = training > 0 ? static_cast<double>(tokens_) / training : 0;
  const double since_first = std::chrono::duration<double>(now - *first_step_at_).count();
  if (progress.step > first_step_ && since_first > 0)
    progress.eta_seconds = static_cast<double>(progress.total_steps - progress.step) * since_first /
                           static_cast<double>(progress.step - first_step_);
  return progress;
}

// A diverged job stores nothing and keeps its last checkpoint, which holds only values
// from before the divergence; its group goes on without it.
Status GroupTraining::on_diverged(runtime::TrainingJob& job) {
  SCION_RETURN_IF_ERROR(recorder_.flush(run_of(job)));
  ModelOutcome& outcome = outcome_of(job);
  outcome.status = OutcomeStatus::kDiverged;
  outcome.seconds = seconds_since_start();
  outcome_.diverged.push_back(divergence_message(job));
  return recorder_.finish(run_of(job), lineage::RunStatus::kDiverged, outcome_.diverged.back());
}

Status GroupTraining::on_finished(runtime::TrainingJob& job) {
  SCION_RETURN_IF_ERROR(recorder_.flush(run_of(job)));
  ModelOutcome& outcome = outcome_of(job);
  outcome.seconds = seconds_since_start();
  outcome.status = OutcomeStatus::kTrained;
  outcome.kept = job.kept();
  if (job.kept()) SCION_RETURN_IF_ERROR(recorder_.record_kept(run_of(job), *job.kept()));
  if (!job.kept() && !job.recipe().keep_best.empty()) {
    outcome.keep_best_unmet = keep_best_unmet_message(job.recipe().keep_best);
    SCION_RETURN_IF_ERROR(recorder_.record_keep_best_unmet(run_of(job), outcome.keep_best_unmet));
  }
  SCION_RETURN_IF_ERROR(
      recorder_.commit(run_of(job), job, inherited_digests_[member_of_.at(&job)]));
  checkpoints_.remove(job.model());  // a leftover would be harmless: the model is up to date
  return Status::ok();
}

// ---- summarise ------------------------------------------------------------------------

void GroupTraining::summarise(const Status& status, const runtime::FamilyTrainer& trainer) {
  const double seconds = seconds_since_start();
  const bool interrupted = status.code() == StatusCode::kCancelled;
  outcome_.groups.push_back({names_,
                             status.is_ok() ? OutcomeStatus::kTrained
                             : interrupted  ? OutcomeStatus::kInterrupted
                                            : OutcomeStatus::kFailed,
                             seconds, seconds > 0 ? static_cast<double>(tokens_) / seconds : 0,
                             spec::precision_name(members_.front()->training->precision),
                             group_memory_bytes(setting_.ws, members_), resident_before_,
                             runtime::peak_resident_bytes().value_or(0)});
  set_step_figures(outcome_.groups.back(), trainer);
  if (!status.is_ok()) end_unfinished_runs(status);
}

// After an interruption or error: each job that neither finished nor diverged is marked
// so, in its outcome and its run, and an interrupted one that took steps is checkpointed.
void GroupTraining::end_unfinished_runs(const Status& status) {
  const bool interrupted = status.code() == StatusCode::kCancelled;
  for (const auto& job : jobs_) {
    ModelOutcome& outcome = outcome_of(*job);
    if (outcome.status == OutcomeStatus::kTrained || outcome.status == OutcomeStatus::kDiverged)
      continue;
    outcome.status = interrupted ? OutcomeStatus::kInterrupted : OutcomeStatus::kFailed;
    if (!setting_.writer) continue;
    if (interrupted && job->steps_done() > 0) {
      Status saved = checkpoints_.save(*job);
      if (saved.is_ok())
        outcome_.checkpointed.emplace_back(job->model().name, job->steps_done());
      else
        setting_.observer.warning("no checkpoint for '" + job->model().name +
                                  "': " + saved.message());
    }
    // Best effort: the run row says how it ended; the store is consistent either way.
    recorder_
        .finish(run_of(*job),
                interrupted ? lineage::RunStatus::kInterrupted : lineage::RunStatus::kFailed,
                status.message())
        .ignore_error();
  }
}

}  // namespace scion::workbench
