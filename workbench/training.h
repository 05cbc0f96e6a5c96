// Training: what `scion train`, `scion adapt` and `scion run` share.
//
// train() makes the plan (workbench/plan.h: what is out of date, in which waves and
// co-batched groups, with what memory) and executes exactly that plan. Before any work, a
// plan with a blocked model (Plan::blocked) is refused, and one whose groups would need
// more memory than the machine has available (or than an explicit memory budget) is
// refused with kOutOfMemory (Plan::memory_refusal), nothing written. Then rank 0 imports
// the bases the plan imports and restores the stored versions of recipes that came back,
// parents first; then the groups train wave by wave (workbench/wave_scheduler.h), each
// through workbench/group_training.h on the context's backend of its precision (groups
// never mix precisions): runs, metrics (several steps per transaction), checkpoints and
// the finished parameters (with the run status, in one transaction) go to the store. A
// planned group loses the models below one that diverged on the way; a job whose loss or
// parameters stop being finite is recorded `diverged` and stores nothing, and the others
// go on (kDiverged). Setting `*interrupted` stops between steps: finished models are
// kept, unfinished runs are marked interrupted, each unfinished job leaves a checkpoint
// under <store>/checkpoints/ from which `resume` continues it exactly, and the store
// stays consistent.
//
// Under mpirun every rank calls train() over the same work with its context (docs/
// distributed.md, TrainRequest::parallel): in a data-parallel wave the ranks agree on each
// group's setup and split its batches, and rank 0 alone writes the store (runs, metrics,
// parameters, datasets) and checkpoints; in a task-parallel wave each rank trains and
// stores the groups of its trunks (assign_ranks) alone, and the ranks share their outcomes
// when the wave ends. What happens on the way is told to a TrainingObserver; the result
// is a plain TrainingOutcome (workbench/training_outcome.h) that cli/training_session.cpp
// prints.
#pragma once

#include <atomic>
#include <optional>
#include <string>

#include "base/status.h"
#include "spec/workspace.h"
#include "workbench/context.h"
#include "workbench/training_observer.h"
#include "workbench/training_outcome.h"
#include "workbench/training_request.h"

namespace scion::workbench {

// How a training command runs on its ranks, decided before the store is opened.
struct TrainingPlacement {
  Parallelism parallel = Parallelism::kAuto;  // what the ranks' machines allow
  std::optional<std::string> note;            // why it differs from the request's
};

// Under mpirun: first the ranks agree that they run the same scion over the same spec and
// data (workbench/rank_agreement.h: kInvalidArgument naming what differs, on every rank),
// then the parallelism `request` runs with on the context's ranks (task parallelism only
// on one machine: workbench/rank_hosts.h), then the store opened on every rank for it: rank 0
// creating it when missing, the other ranks read-only when every wave runs data parallel and for
// writing otherwise (a task-parallel wave's groups are stored by the rank that trains them, through
// the store's own locking). One process: the store for writing, created when missing. Errors:
// kInvalidArgument for task parallelism across machines; the store's, on every rank alike.
Result<TrainingPlacement> prepare_training(Context& context, const spec::Workspace& ws,
                                           const TrainRequest& request);

// Trains what `request` asks for on the context's ranks, store and backends. Errors
// returned instead of an outcome come before any model trained (an unknown model, a
// memory refusal, a store error); errors after training began are in
// TrainingOutcome::status, with the summary. `interrupted` may be null (never
// interrupted). With several ranks, every rank calls train() with the same workspace and
// request, its context's store opened as prepare_training() does.
// REQUIRES: context.has_store().
Result<TrainingOutcome> train(const spec::Workspace& ws, Context& context,
                              const TrainRequest& request, TrainingObserver& observer,
                              const std::atomic<bool>* interrupted);

}  // namespace scion::workbench
