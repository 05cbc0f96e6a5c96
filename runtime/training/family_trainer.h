// FamilyTrainer: trains a group of jobs that share one frozen trunk, co-batched.
//
// Each step gathers the next micro-batch of every active job into one FamilyBatch (one
// segment per job; consecutive passes when their rows exceed
// TrainerOptions::max_rows_per_pass), runs the frozen trunk once over all rows, applies
// each job's adapters to its own rows and back-propagates each job's loss into its own
// trainable parameters (SegmentedTransformer). Then every job takes its own optimizer step
// at its own learning rate. Jobs keep their own data order, batch size, gradient accumulation,
// schedule, step count and early stopping; a job that finishes leaves the batch and the
// rest go on. Because each segment's loss and gradients are exactly those of the job
// alone, co-batched training gives the parameters of training each job by itself.
//
// Jobs whose models share modules (`share`) belong to one ShareGroup: every member's
// gradient reaches the shared modules, which the group updates once per step after the
// members' own updates, and the members are reported finished together, once all of them
// are, so that each is stored with the final shared values. A share's members must all be
// in the group.
//
// A job diverges when its step's loss is not finite (it then takes no update) or when a
// trainable parameter is not finite after its update (checked every step, so no
// checkpoint or stored model ever holds one). It leaves the group at once, reported
// through on_job_diverged and never through on_job_finished; the other jobs go on. The
// members of a ShareGroup diverge together, since they update the same shared modules.
//
// Data parallelism (data_parallel.h): with a communicator of several ranks, every rank
// runs the same jobs, trains its share of each micro-batch's rows, and the ranks' losses
// and gradients are summed before the updates, so every rank takes the same steps. Each
// step, the ranks agree on its outcome (Communicator::agree): an error or interrupt on
// one rank, a failing callback included, stops all of them with that error.
//
// A group may hold a job that trains its trunk (a base, BitFit, full fine-tuning) only
// when it is the group's only job. The trainer borrows jobs and backend. Not thread-safe.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "runtime/comm/communicator.h"
#include "runtime/comm/nccl_reducer.h"
#include "runtime/op_profile.h"
#include "runtime/training/training_job.h"

namespace scion::runtime {

struct StepReport {
  TrainingJob* job = nullptr;
  std::int64_t step = 0;  // 1-based: the optimizer step just taken
  float loss = 0;         // mean over the step's micro-batches
  float lr = 0;
  std::int64_t tokens = 0;  // tokens of this job in the step
  std::optional<ValidationResult> validation;  // when one ran after this step
};

struct TrainerCallbacks {
  std::function<Status(const StepReport&)> on_step;     // after each job's step
  // After each step of the group: every job still training has taken it (and on_step has
  // heard each); `reports` holds their reports, in the order of the jobs.
  std::function<Status(std::span<const StepReport> reports)> on_group_step;
  // When a job is done: it has finished, and so has every job it shares modules with.
  std::function<Status(TrainingJob&)> on_job_finished;
  // When a job has diverged (TrainingJob::divergence() says how); once per job.
  std::function<Status(TrainingJob&)> on_job_diverged;
  // Once per run with several ranks on GPUs: how the gradients are summed (NCCL between
  // the GPUs, or through the host and why). Every rank calls it; optional.
  std::function<void(const std::string&)> on_note;
};

struct TrainerOptions {
  // Most token rows one forward/backward pass holds. A step whose jobs bring more rows
  // runs as several passes over consecutive jobs: gradients are sums over rows, so the
  // result is the same, and activations stay bounded by this many rows instead of growing
  // with the group. At W1's width (256) passes past a few thousand rows run at memory
  // speed: 32 co-batched jobs in one pass cost 25% more per job-step than one
  // (bench/README.md, "Scaling").
  std::int64_t max_rows_per_pass = 4096;
  // The ranks that share each step's rows (borrowed); null: this process alone.
  Communicator* communicator = nullptr;
  // Where the time spent building each step's batches goes (OpClass::kData; borrowed);
  // null: not timed.
  OpProfile* profile = nullptr;
};

// One step of a group: its wall time (forward, backward, updates, validation and the
// callbacks) and the tokens of every job in it.
struct StepTiming {
  double seconds = 0;
  std::int64_t tokens = 0;
};

class FamilyTrainer {
 public:
  explicit FamilyTrainer(Backend& backend, TrainerOptions options = {})
      : backend_(backend), net_(backend), options_(options),
        comm_(options.communicator ? *options.communicator : solo_) {}

  // Runs every job to its end. Checks `cancel` between steps and returns kCancelled when
  // it is set, leaving unfinished jobs as they are. A callback's error stops the run.
  // REQUIRES: every member of each job's ShareGroup is in `jobs`.
  Status run(const std::vector<TrainingJob*>& jobs, const TrainerCallbacks& callbacks,
             const std::atomic<bool>* cancel = nullptr);

  // The steps run() took, in order: for steady-state rates (the median of the steps after
  // the first, which also pays for the first use of every kernel and buffer).
  const std::vector<StepTiming>& step_timings() const { return step_timings_; }
  // Seconds from the process's start to the end of the first step run() took (time to the
  // first step, docs/benchmarks.md); nullopt before one, or where /proc does not say.
  std::optional<double> first_step_end() const { return first_step_end_; }

 private:
  // One optimizer step of every job in `active`.
  Status step(const std::vector<TrainingJob*>& active, const TrainerCallbacks& callbacks);
  // The forward and backward passes of one step, this rank's rows of every micro-batch;
  // adds each job's loss to loss_sum and its tokens (all ranks' rows) to tokens.
  Status forward_backward(const std::vector<TrainingJob*>& active, std::vector<double>& loss_sum,
                          std::vector<std::int64_t>& tokens);
  // Each job's and ShareGroup's update, skipping diverged ones and marking those whose
  // parameters the update made non-finite. Returns the learning rates, by job.
  std::vector<float> apply_updates(const std::vector<TrainingJob*>& active,
                                   const std::vector<ShareGroup*>& shares);
  // With several ranks, before the first step's sums: every rank together decides whether
  // the gradients are summed by NCCL on the GPUs (device_reducer_) or through the host
  // (runtime/comm/nccl_reducer.h), and says which through callbacks.on_note.
  Status choose_gradient_path(const TrainerCallbacks& callbacks);

  Backend& backend_;
  SegmentedTransformer net_;
  TrainerOptions options_;
  SingleProcessCommunicator solo_;
  Communicator& comm_;
  bool gradient_path_chosen_ = false;
  std::unique_ptr<DeviceReducer> device_reducer_;  // null: the host path
  std::vector<StepTiming> step_timings_;
  std::optional<double> first_step_end_;
};

}  // namespace scion::runtime
