#include "workbench/training.h"

#include <algorithm>
#include <set>
#include <vector>

#include "lineage/spec_records.h"
#include "runtime/model/shared_modules.h"
#include "workbench/declared_import.h"
#include "workbench/group_training.h"
#include "workbench/plan.h"
#include "workbench/rank_agreement.h"
#include "workbench/rank_hosts.h"
#include "workbench/spec_version.h"
#include "workbench/training_datasets.h"
#include "workbench/wave_scheduler.h"

namespace scion::workbench {
namespace {

// One training command's execution of its plan, on this rank (docs/distributed.md: every
// rank runs a Session over the same plan).
class Session {
 public:
  Session(const spec::Workspace& ws, Context& context, const TrainRequest& request,
          TrainingObserver& observer, const std::atomic<bool>* interrupted)
      : ws_(ws),
        context_(context),
        request_(request),
        observer_(observer),
        interrupted_(interrupted),
        shares_(ws),
        datasets_(ws) {}

  Result<TrainingOutcome> run(const Plan& plan);

 private:
  // The plan's imports and restores, parents first, before any group trains (the groups'
  // models may be adapted from them): rank 0 does them, and the ranks agree.
  Status prepare_models(const Plan& plan);
  Status prepare_on_writer(const Plan& plan);
  Status prepare_model(const PlannedModel& planned);
  // The plan's groups, wave by wave; ok, or what stopped them.
  Status run_waves(const Plan& plan);
  Status run_wave(const Plan& plan, const WaveScheduler& scheduler, std::size_t wave);
  // Trains the planned group `index`: its models less those below one that diverged.
  Status train_planned_group(const Plan& plan, std::size_t index, runtime::Communicator& comm,
                             bool writer);
  std::vector<const spec::Model*> without_descendants_of_diverged(
      const std::vector<std::string>& group);

  const spec::Workspace& ws_;
  Context& context_;
  const TrainRequest& request_;
  TrainingObserver& observer_;
  const std::atomic<bool>* interrupted_;
  runtime::SharedModules shares_;
  TrainingDatasets datasets_;
  runtime::SingleProcessCommunicator alone_;  // a task-parallel wave's groups' ranks
  TrainingOutcome outcome_;
};

Status Session::prepare_model(const PlannedModel& p) {
  if (interrupted_ && interrupted_->load())
    return Status(StatusCode::kCancelled, "interrupted before '" + p.name + "' was stored");
  const spec::Model& model = *ws_.find_model(p.name);
  if (p.state == ModelState::kImports) {
    auto imported = import_declared_base(ws_, context_.store(), model);
    if (!imported) return imported.status();
    if (!request_.quiet)
      for (const std::string& note : imported->notes) observer_.note(p.name + ": " + note);
    outcome_.models.emplace_back(p.name, OutcomeStatus::kImported, imported->run);
  } else {
    auto run = context_.store().restore_version(lineage::model_record_for(ws_, model));
    if (!run) return run.status();
    outcome_.models.emplace_back(p.name, OutcomeStatus::kRestored, *run);
    outcome_.models.back().restored_run = p.restores_run;
  }
  observer_.prepared(outcome_.models.back());
  return Status::ok();
}

Status Session::prepare_on_writer(const Plan& plan) {
  for (const PlannedModel& p : plan.models)
    if (p.state == ModelState::kImports || p.state == ModelState::kRestores)
      SCION_RETURN_IF_ERROR(prepare_model(p));
  return Status::ok();
}

Status Session::prepare_models(const Plan& plan) {
  runtime::Communicator& comm = context_.comm();
  return comm.agree(comm.rank() == 0 ? prepare_on_writer(plan) : Status::ok());
}

// The models of a planned group, less those below one that diverged: their parent will
// not be stored.
std::vector<const spec::Model*> Session::without_descendants_of_diverged(
    const std::vector<std::string>& group) {
  std::set<std::string> diverged;
  for (const ModelOutcome& o : outcome_.models)
    if (o.status == OutcomeStatus::kDiverged) diverged.insert(o.name);
  std::vector<const spec::Model*> kept;
  for (const std::string& name : group) {
    const spec::Model* m = ws_.find_model(name);
    const auto ancestry = ws_.ancestry(*m);
    auto blocked_by = std::find_if(ancestry.begin(), ancestry.end(), [&](const spec::Model* a) {
      return diverged.count(a->name) > 0;
    });
    if (blocked_by == ancestry.end()) {
      kept.push_back(m);
      continue;
    }
    outcome_.models.emplace_back(name, OutcomeStatus::kNotTrained);
    outcome_.models.back().blocked_by = (*blocked_by)->name;
  }
  return kept;
}

Status Session::train_planned_group(const Plan& plan, std::size_t index,
                                    runtime::Communicator& comm, bool writer) {
  const std::vector<const spec::Model*> members =
      without_descendants_of_diverged(plan.groups[index].models);
  if (members.empty()) return Status::ok();
  const auto kind =
      members.front()->is_base() ? lineage::RunKind::kTrain : lineage::RunKind::kAdapt;
  const runtime::Precision precision =
      members.front()->training->precision == spec::Precision::kBF16 ? runtime::Precision::kBF16
                                                                     : runtime::Precision::kF32;
  auto backend = context_.backend(precision);
  if (!backend) return backend.status();
  const GroupSetting setting{.ws = ws_,
                             .store = context_.store(),
                             .shares = shares_,
                             .datasets = datasets_,
                             .observer = observer_,
                             .interrupted = interrupted_,
                             .comm = comm,
                             .writer = writer,
                             .resume = request_.resume,
                             .quiet = request_.quiet,
                             .profile = context_.profile()};
  return GroupTraining(setting, **backend, members, kind, outcome_).run();
}

Status Session::run_wave(const Plan& plan, const WaveScheduler& scheduler, std::size_t wave) {
  const bool task = scheduler.task_parallel(wave);
  runtime::Communicator& group_comm = task ? alone_ : context_.comm();
  const OutcomeMark before = mark_of(outcome_);
  Status status;
  for (std::size_t group : scheduler.groups_of(wave)) {
    status = train_planned_group(plan, group, group_comm, scheduler.writes(wave));
    if (!status.is_ok()) break;
  }
  if (!task) return status;  // the ranks agreed on every step of the wave's groups
  // The next wave starts when every rank has finished this one and stored its models,
  // and knows what the others trained (and which diverged), or with the lowest failing
  // rank's error.
  if (Status shared = exchange_wave_outcomes(context_.comm(), before, outcome_);
      !shared.is_ok() && status.is_ok())
    status = shared;
  return context_.comm().agree(status);
}

Status Session::run_waves(const Plan& plan) {
  const WaveScheduler scheduler(plan, request_.parallel, context_.comm().size(),
                                context_.comm().rank());
  for (std::size_t wave = 0; wave < scheduler.waves(); ++wave)
    SCION_RETURN_IF_ERROR(run_wave(plan, scheduler, wave));
  return Status::ok();
}

// Executes `plan`: its notes, its refusals (a blocked model; a group over the memory,
// unless the request ignores the limit), its imports and restores, then its groups wave
// by wave.
Result<TrainingOutcome> Session::run(const Plan& plan) {
  if (!request_.quiet)
    for (const std::string& note : plan.notes) observer_.note(note);
  for (const PlannedModel& m : plan.models)
    if (m.state == ModelState::kUpToDate && ws_.find_model(m.name)->training)
      outcome_.models.emplace_back(m.name, OutcomeStatus::kUpToDate);
  SCION_RETURN_IF_ERROR(plan.blocked());
  // Agreed: the memory available may differ between the ranks' moments of reading it.
  // Also every rank has made its plan before any rank writes the store.
  SCION_RETURN_IF_ERROR(
      context_.comm().agree(request_.ignore_memory_limit ? Status::ok() : plan.memory_refusal()));
  Status status = prepare_models(plan);
  if (status.is_ok()) status = run_waves(plan);
  outcome_.status = status;
  return std::move(outcome_);
}

}  // namespace

Result<TrainingPlacement> prepare_training(Context& context, const spec::Workspace& ws,
                                           const TrainRequest& request) {
  TrainingPlacement placement{.parallel = request.parallel};
  runtime::Communicator& comm = context.comm();
  // Before anything else, and before the store is opened for writing: the same spec and
  // data on every rank (workbench/rank_agreement.h).
  SCION_RETURN_IF_ERROR(agree_on_workspace(comm, ws));
  // Ranks on several machines never all write the store (workbench/rank_hosts.h): auto
  // runs data parallel there, and task is refused, on every rank alike.
  if (comm.size() > 1 && request.parallel != Parallelism::kData) {
    auto hosts = rank_hosts(comm);
    if (!hosts) return hosts.status();
    auto parallel = parallelism_on_hosts(request.parallel, *hosts);
    if (!parallel) return parallel.status();
    if (*parallel != request.parallel)
      placement.note =
          "the ranks are on several machines: every wave runs data parallel (rank 0 alone "
          "writes the store; docs/distributed.md, \"Several machines\")";
    placement.parallel = *parallel;
  }
  SCION_RETURN_IF_ERROR(context.open_store(
      StoreAccess::kCreate,
      placement.parallel == Parallelism::kData ? StoreAccess::kRead : StoreAccess::kWrite));
  return placement;
}

Result<TrainingOutcome> train(const spec::Workspace& ws, Context& context,
                              const TrainRequest& request, TrainingObserver& observer,
                              const std::atomic<bool>* interrupted) {
  const bool overridden = overrides_recipes(request);
  const spec::Workspace overridden_ws =
      overridden ? with_overrides(ws, request) : spec::Workspace();
  const spec::Workspace& planned = overridden ? overridden_ws : ws;
  auto plan = make_plan(planned, &context.store(), request);
  // Every rank made its plan (or all stop with the first error), and the plans are one
  // before any rank trains or writes (workbench/rank_agreement.h).
  SCION_RETURN_IF_ERROR(context.comm().agree(plan ? Status::ok() : plan.status()));
  SCION_RETURN_IF_ERROR(agree_on_plan(context.comm(), *plan));
  auto outcome = Session(planned, context, request, observer, interrupted).run(*plan);
  // The spec version this command ran, seen now: what `scion gc --keep N` counts.
  if (outcome && context.comm().rank() == 0) {
    Status recorded = record_spec_version(planned, context.store());
    if (!recorded.is_ok() && outcome->status.is_ok()) outcome->status = recorded;
  }
  return outcome;
}

}  // namespace scion::workbench
