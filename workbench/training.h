// Training: what `scion train`, `scion adapt` and `scion run` share.
//
// train() makes the plan (workbench/plan.h: what is out of date, in which waves and
// co-batched groups, with what memory) and executes exactly that plan: it runs each
// planned group through runtime::FamilyTrainer,
// and records every run, its metrics (several steps per transaction) and the finished
// parameters in the lineage store (parameters and run status in one transaction).
// Setting `*interrupted` stops between steps: finished models are kept, unfinished runs
// are marked interrupted, and the store stays consistent. Each unfinished job leaves a
// checkpoint (every kCheckpointEvery steps, and at the interruption) under
// <store>/checkpoints/, from which `resume` continues it exactly. Before any work, a
// plan with a blocked model (Plan::blocked) is refused, and one whose groups would need more
// memory than the machine has available (or than an explicit memory budget) is refused
// with kOutOfMemory (Plan::memory_refusal), nothing written. A planned group loses the
// models below one that diverged on the way. A job whose
// loss or parameters stop being finite is recorded `diverged` and stores nothing; the
// others go on (kDiverged). Each group runs on the backend of its precision (groups never
// mix precisions), and its memory is measured (planned, resident before, peak). Under
// mpirun every rank calls train() over the same work with its communicator, wave by wave
// (docs/distributed.md, TrainRequest::parallel): in a data-parallel wave the ranks agree
// on each group's setup and split its batches, and rank 0 alone writes the store (runs,
// metrics, parameters, datasets) and checkpoints; in a task-parallel wave each rank
// trains and stores the groups of its trunks (assign_ranks) alone, and the ranks share
// their outcomes when the wave ends. What happens on
// the way is told to a TrainingObserver; the result is a plain TrainingOutcome that
// cli/training_session.cpp prints.
#pragma once

#include <atomic>
#include <nlohmann/json_fwd.hpp>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "lineage/store.h"
#include "runtime/comm/communicator.h"
#include "runtime/training/family_trainer.h"
#include "base/status.h"
#include "spec/workspace.h"
#include "workbench/plan.h"
#include "workbench/training_request.h"

namespace scion::workbench {

// What one model's training produced, for the summary.
struct ModelOutcome {
  ModelOutcome(std::string model, std::string state, std::int64_t run = 0)
      : name(std::move(model)), status(std::move(state)), run_id(run) {}

  std::string name;
  // trained | restored | imported | up to date | interrupted | failed | diverged |
  // not trained: ...
  std::string status;
  std::int64_t run_id = 0;
  std::optional<std::int64_t> restored_run;  // restored: the run that made the version
  std::int64_t steps = 0;         // the training step reached, counted from the run's start
  std::int64_t resumed_from = 0;  // the checkpoint's step it continued from; 0: from the start
  double final_loss = 0;
  std::optional<double> val_loss, val_accuracy;
  std::map<std::string, double> validation;  // the last validation's metrics (val_loss, val_f1, ...)
  std::optional<runtime::KeptValidation> kept;  // keep_best: the validation whose parameters were stored
  double seconds = 0;
};

// One step of a co-batched group, every running job's step done: what the progress line
// of a group shows (TrainingObserver::group_step).
struct GroupProgress {
  std::vector<std::string> models;            // the group's jobs, spec order
  std::int64_t step = 0;                      // the group's step: its slowest running job's
  std::int64_t total_steps = 0;               // the longest job's steps
  std::size_t running = 0;                    // jobs not finished yet
  std::vector<std::optional<double>> losses;  // each job's last loss, `models` order
  double mean_loss = 0;                       // over the jobs that reported one
  double tokens_per_second = 0;               // since the group started
  double elapsed_seconds = 0;
  std::optional<double> eta_seconds;  // from the group's step rate; nullopt before step 2
};

// What training says as it goes. Called on the training thread.
class TrainingObserver {
 public:
  virtual ~TrainingObserver() = default;
  virtual void note(const std::string& message) = 0;
  virtual void warning(const std::string& message) = 0;
  virtual void group_started(const std::vector<std::string>& models) = 0;
  virtual void resuming(const std::string& model, std::int64_t step) = 0;
  virtual void step(const runtime::StepReport& report, std::size_t group_size) = 0;
  // Once per step of a group of several jobs, when each running job has done the step.
  virtual void group_step(const GroupProgress&) {}
  // A model made current without training: imported from its declared checkpoint, or a
  // stored version of its recipe restored. `outcome` is its line of the summary.
  virtual void prepared(const ModelOutcome&) {}
};

struct GroupOutcome {
  std::vector<std::string> models;
  std::string status;  // trained | interrupted | failed
  double seconds = 0;
  double tokens_per_second = 0;
  std::string precision;  // fp32 | bf16
  // Memory: `scion plan`'s estimate for the group, the process's resident memory when the
  // group started, and its peak while the group trained (0: /proc did not say).
  std::int64_t planned_bytes = 0, resident_before_bytes = 0, peak_resident_bytes = 0;
  // Steps (of the whole group: every active job's one step) and the steady state: the
  // median of the steps after the first (which pays for first uses: JIT, page faults), as
  // seconds per step and tokens per second; 0 with fewer than 2 steps. Time to the first
  // step: seconds from the process's start to the end of the group's first step (0: /proc
  // did not say). BENCHMARKS.md, "Like with like".
  std::int64_t steps = 0;
  double steady_step_seconds = 0, steady_tokens_per_second = 0;
  double first_step_end_seconds = 0;
};

struct TrainingOutcome {
  std::vector<ModelOutcome> models;
  std::vector<GroupOutcome> groups;
  std::vector<std::string> diverged;  // one message per model that diverged
  // Jobs an interruption left checkpoints of: (model, step).
  std::vector<std::pair<std::string, std::int64_t>> checkpointed;
  // What stopped training once it had started: ok, kCancelled (interrupted), or the
  // error (a parent not stored, a store or runtime failure). Divergences are in
  // `diverged`, not here.
  Status status;
};

// Trains what `request` asks for. Errors returned instead of an outcome come before any
// model trained or while choosing a wave (an unknown model, a memory refusal, a store
// error); errors after training began are in TrainingOutcome::status, with the summary.
// `interrupted` may be null (never interrupted). `comm` may be null (one process); with
// several ranks, every rank calls train() with the same workspace and request, rank 0's
// `store` open for writing and the others' read-only (Parallelism::kData) or for writing.
Result<TrainingOutcome> train(const spec::Workspace& ws, lineage::LineageStore& store,
                              const TrainRequest& request, TrainingObserver& observer,
                              const std::atomic<bool>* interrupted,
                              runtime::Communicator* comm = nullptr);

// A group's outcome as `--json` prints it (docs/json.md) and the ranks exchange it.
nlohmann::json group_outcome_json(const GroupOutcome& g);

// keep_best's choice as `--json` prints it and the run records it ({step, metric, value,
// last_step, last_value}), and in words ("kept step 40 of 60: the best val_f1 ...").
nlohmann::json kept_json(const runtime::KeptValidation& kept);
std::string kept_message(const runtime::KeptValidation& kept);

// What a training command ends with: outcome.status, or, when that is ok and models
// diverged, kDiverged with the last divergence's message (outcome.diverged holds all).
Status training_status(const TrainingOutcome& outcome);

}  // namespace scion::workbench
