// JobCheckpoints: a training group's checkpoints (workbench/checkpoint_file.h holds the
// file itself). Saving: every kCheckpointEvery steps of a job, a member of a share unit
// together with the rest of its unit by the unit's steps, and at an interruption; only on
// the rank that writes the group's store. Resuming, with `--resume`: a job from the
// checkpoint of its current recipe, a share unit only as a whole (every member's
// checkpoint from one moment), on every rank alike. Without `--resume`, or when the
// checkpoint is of an earlier recipe, the job starts over and the observer hears why.
// Borrows the store, workspace and observer. Not thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <optional>

#include "base/status.h"
#include "lineage/store.h"
#include "runtime/op_profile.h"
#include "runtime/training/family_trainer.h"
#include "runtime/training/share_group.h"
#include "runtime/training/training_job.h"
#include "spec/workspace.h"
#include "workbench/checkpoint_file.h"
#include "workbench/training_observer.h"

namespace scion::workbench {

class JobCheckpoints {
 public:
  // Steps between checkpoints of a running job: often enough that a crash loses little,
  // rarely enough that writing them stays a small part of the step time.
  static constexpr std::int64_t kCheckpointEvery = 100;

  struct Options {
    bool writer = true;                     // this rank writes the group's checkpoints
    bool resume = false;                    // --resume: continue jobs from their checkpoints
    bool quiet = false;                     // leave out the notes that only inform
    runtime::OpProfile* profile = nullptr;  // where writing them is timed (kStore)
  };
  JobCheckpoints(lineage::LineageStore& store, const spec::Workspace& ws,
                 TrainingObserver& observer, Options options)
      : store_(store), ws_(ws), observer_(observer), options_(options) {}

  // Continues `job` (not a member of a share unit) from its checkpoint when --resume asks
  // and there is one of its recipe.
  Status resume(runtime::TrainingJob& job);
  // Continues a share unit's members and shared modules, all from one moment, or none.
  Status resume_unit(runtime::ShareGroup& share);

  // After `report`'s step: writes the checkpoints the step makes due (its job's, or its
  // whole unit's once per unit step). Returns whether it wrote any.
  Result<bool> save_if_due(const runtime::StepReport& report);
  // Writes `job`'s checkpoint now (an interruption): its own tensors, and for a member of
  // a share unit its unit's (prefixed "share.") with the unit's step count.
  Status save(const runtime::TrainingJob& job);
  // Removes the checkpoint of a job whose model is now stored.
  void remove(const spec::Model& model);

 private:
  Status save_unit(const runtime::TrainingJob& job);
  bool resume_wanted(const spec::Model& model) const;
  void note_outdated_checkpoints(const spec::Model& model) const;
  // The checkpoint of `model`'s current recipe, or nullopt (with a note) when the file
  // names another recipe: training then starts over.
  Result<std::optional<Checkpoint>> read_current(const spec::Model& model);

  lineage::LineageStore& store_;
  const spec::Workspace& ws_;
  TrainingObserver& observer_;
  const Options options_;
  std::map<const runtime::ShareGroup*, std::int64_t> unit_saved_at_;  // the unit's steps
};

}  // namespace scion::workbench
