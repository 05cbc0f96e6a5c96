// GroupTraining: one co-batched group of a plan, trained in three steps.
//
// set_up: the members' parameters in one runtime::ParameterStore on the group's backend
// (frozen trunk weights in bf16 on a bf16 backend), inherited values copied from the
// store, new ones initialised, share units' ShareGroups, each member's job over its
// dataset, one run per job started in the store, and checkpoints resumed (--resume). The
// ranks agree on the set-up before training: one that fails stops them all, and the runs
// it started are marked failed.
// train: runtime::FamilyTrainer over the jobs, its callbacks recording each step's
// metrics (workbench/run_recorder.h), writing checkpoints (workbench/job_checkpoints.h),
// reporting progress to the observer, recording a divergence, and committing a finished
// job's parameters and run in one transaction.
// summarise: the group's outcome (status, time, tokens/s, steps and the steady state,
// memory: planned, resident before, peak) appended to the command's TrainingOutcome; after an
// interruption or error, every unfinished job's outcome and run say so, and an interrupted job
// leaves a checkpoint.
//
// The members' outcomes are appended to TrainingOutcome::models in member order when set
// up, and updated as they train. Borrows everything it is given. Not thread-safe.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "base/status.h"
#include "lineage/store.h"
#include "runtime/comm/communicator.h"
#include "runtime/model/parameter_binding.h"
#include "runtime/model/shared_modules.h"
#include "runtime/op_profile.h"
#include "runtime/training/family_trainer.h"
#include "runtime/training/share_group.h"
#include "spec/workspace.h"
#include "workbench/job_checkpoints.h"
#include "workbench/run_recorder.h"
#include "workbench/training_datasets.h"
#include "workbench/training_observer.h"
#include "workbench/training_outcome.h"

namespace scion::workbench {

// What the groups of one training command share; borrowed.
struct GroupSetting {
  const spec::Workspace& ws;
  lineage::LineageStore& store;
  const runtime::SharedModules& shares;
  TrainingDatasets& datasets;
  TrainingObserver& observer;
  const std::atomic<bool>* interrupted;   // may be null: never interrupted
  runtime::Communicator& comm;            // the group's ranks (one rank, task parallel)
  bool writer = true;                     // this rank writes the group's store
  bool resume = false;                    // --resume
  bool quiet = false;                     // leave out the notes that only inform
  runtime::OpProfile* profile = nullptr;  // --profile: set-up and store writes timed here
};

class GroupTraining {
 public:
  // REQUIRES: `members` non-empty, of one precision (training_groups() never mixes them),
  // each trainable; their parents stored.
  GroupTraining(const GroupSetting& setting, runtime::Backend& backend,
                std::vector<const spec::Model*> members, lineage::RunKind kind,
                TrainingOutcome& outcome);
  ~GroupTraining();

  // set_up, train, summarise. Returns what stopped the group: ok, kCancelled, or the error.
  Status run();

 private:
  using Clock = std::chrono::steady_clock;

  Status set_up();
  Status bind_parameters(std::map<std::string, runtime::ParameterBinding>& bindings);
  Status create_share_groups(const std::map<std::string, runtime::ParameterBinding>& bindings);
  Status create_job(std::size_t member, const runtime::ParameterBinding& binding);
  // Runs `trainer` over the jobs; returns what stopped it.
  Status train(runtime::FamilyTrainer& trainer);
  void summarise(const Status& status, const runtime::FamilyTrainer& trainer);
  void end_unfinished_runs(const Status& status);

  runtime::TrainerCallbacks callbacks();
  Status on_step(const runtime::StepReport& report);
  Status on_group_step(std::span<const runtime::StepReport> reports);
  Status on_diverged(runtime::TrainingJob& job);
  Status on_finished(runtime::TrainingJob& job);
  GroupProgress progress_of(std::span<const runtime::StepReport> reports, Clock::time_point now);

  ModelOutcome& outcome_of(const runtime::TrainingJob& job);
  std::int64_t run_of(const runtime::TrainingJob& job) const { return run_ids_.at(&job); }
  double seconds_since_start() const;

  const GroupSetting& setting_;
  runtime::Backend& backend_;
  const std::vector<const spec::Model*> members_;
  std::vector<std::string> names_;  // the members', in order
  const lineage::RunKind kind_;
  TrainingOutcome& outcome_;
  const std::size_t first_outcome_;  // the members' entries in outcome_.models start here
  RunRecorder recorder_;
  JobCheckpoints checkpoints_;

  const Clock::time_point start_;
  std::int64_t resident_before_ = 0;
  // Declared in the order they depend on each other: jobs go first, the pool last.
  runtime::ParameterStore pool_;
  std::map<std::string, std::unique_ptr<runtime::ShareGroup>> share_groups_;  // by unit owner
  std::vector<std::unique_ptr<runtime::TrainingJob>> jobs_;
  std::vector<std::map<std::string, std::string>> inherited_digests_;  // by member
  std::map<const runtime::TrainingJob*, std::int64_t> run_ids_;
  std::map<const runtime::TrainingJob*, std::size_t> member_of_;

  std::int64_t tokens_ = 0;
  Clock::time_point training_began_;  // set-up done
  std::optional<Clock::time_point> first_step_at_;
  std::int64_t first_step_ = 0;
};

}  // namespace scion::workbench
