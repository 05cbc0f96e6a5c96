// RunRecorder: what training writes to the lineage store about its runs, and when. A run
// is started when its job is set up; each step's metrics are buffered and appended
// kMetricsEvery steps per transaction (one commit, an fsync, per step cost more than a
// small model's step), and at every checkpoint and end of the job; a finished job's
// parameters and run status are committed in one transaction; a job that stops otherwise
// has its run finished as diverged, interrupted or failed. A crash loses at most the
// buffered steps' metrics, never parameters.
//
// Only the rank that writes the group's store records (workbench/wave_scheduler.h: rank 0
// in a data-parallel wave, the training rank in a task-parallel one). On the others every
// call is a no-op that succeeds, and start() returns run id 0. Borrows the store and
// workspace. Not thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "base/status.h"
#include "lineage/records.h"
#include "lineage/store.h"
#include "runtime/op_profile.h"
#include "runtime/training/training_job.h"
#include "spec/workspace.h"

namespace scion::workbench {

class RunRecorder {
 public:
  // Steps whose metrics are appended in one store transaction.
  static constexpr std::size_t kMetricsEvery = 50;

  // `profile` (may be null): where the store's time is counted (runtime::OpClass::kStore).
  RunRecorder(lineage::LineageStore& store, const spec::Workspace& ws, bool writer,
              runtime::OpProfile* profile = nullptr)
      : store_(store), ws_(ws), writer_(writer), profile_(profile) {}

  bool writer() const { return writer_; }

  // Records `dataset` (once per digest is enough; the store keeps one row per digest).
  Status record_dataset(const lineage::DatasetRecord& dataset);
  // Starts a `kind` run of `model`'s recipe (its canonical recipe, dataset digest and
  // seed) and returns its id; 0 on a rank that does not write.
  Result<std::int64_t> start(const spec::Model& model, lineage::RunKind kind);
  // Buffers one step's metrics of `run`, and appends the run's buffer when it holds
  // kMetricsEvery steps or `flush_now` (a checkpoint was just written).
  Status record_step(std::int64_t run, lineage::StepMetrics metrics, bool flush_now);
  // Appends `run`'s buffered metrics, if any.
  Status flush(std::int64_t run);
  // Commits `job`'s parameters (read from its backend; a frozen weight held in bf16 is
  // stored as the parent's fp32 value, unrounded) as its model's version and marks `run`
  // finished, in one transaction. `inherited_digests`: the stored digests of the values
  // the job inherited, so a frozen one is not hashed again.
  // REQUIRES: `job` finished; its metrics flushed.
  Status commit(std::int64_t run, const runtime::TrainingJob& job,
                const std::map<std::string, std::string>& inherited_digests);
  // Records keep_best's choice in `run`'s hyperparameters (kept_json) with its message
  // (kept_message, workbench/training_outcome.h). Before commit: the run is still running.
  Status record_kept(std::int64_t run, const runtime::KeptValidation& kept);
  // Records that keep_best chose nothing (`kept`: null) with `message`. Before commit.
  Status record_keep_best_unmet(std::int64_t run, const std::string& message);
  // Ends `run` as `status` (diverged, interrupted, failed) with `message`.
  Status finish(std::int64_t run, lineage::RunStatus status, const std::string& message);

 private:
  lineage::LineageStore& store_;
  const spec::Workspace& ws_;
  const bool writer_;
  runtime::OpProfile* profile_;
  std::map<std::int64_t, std::vector<lineage::StepMetrics>> unsaved_;  // by run
};

}  // namespace scion::workbench
