#include "runtime/training/family_trainer.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <numeric>
#include <string>

#include "runtime/process_clock.h"
#include "runtime/training/data_parallel.h"

namespace scion::runtime {

namespace {

// Whether `job` may be reported finished: it is, and so is every job it shares with.
bool done(const TrainingJob& job) {
  return job.finished() && (!job.share_group() || job.share_group()->finished());
}

std::string loss_text(float loss) {
  return std::isnan(loss) ? "loss is NaN" : "loss is infinite";
}

// A member of a ShareGroup that diverged takes its whole unit with it: the shared modules
// it updates are theirs too.
void spread_divergence(const std::vector<ShareGroup*>& shares) {
  for (ShareGroup* share : shares) {
    const TrainingJob* first = nullptr;
    for (const TrainingJob* member : share->members())
      if (member->divergence() && !first) first = member;
    if (!first) continue;
    for (TrainingJob* member : share->members())
      if (member != first)
        member->mark_diverged({first->divergence()->step, "'" + first->model().name +
                                                              "', which shares modules with it, "
                                                              "diverged: " + first->divergence()->what});
  }
}

bool any_diverged(const ShareGroup& share) {
  return std::any_of(share.members().begin(), share.members().end(),
                     [](const TrainingJob* m) { return m->divergence().has_value(); });
}

}  // namespace

Status FamilyTrainer::run(const std::vector<TrainingJob*>& jobs, const TrainerCallbacks& callbacks,
                          const std::atomic<bool>* cancel) {
  std::vector<TrainingJob*> active, waiting;  // waiting: finished, reported once done()
  auto settle = [&](std::vector<TrainingJob*> candidates) -> Status {
    active.clear();
    std::vector<TrainingJob*> still_waiting;
    for (TrainingJob* job : candidates) {
      if (job->divergence()) {
        if (callbacks.on_job_diverged) SCION_RETURN_IF_ERROR(callbacks.on_job_diverged(*job));
      } else if (!job->finished()) {
        active.push_back(job);
      } else if (!done(*job)) {
        still_waiting.push_back(job);
      } else {
        job->restore_best();
        if (callbacks.on_job_finished) SCION_RETURN_IF_ERROR(callbacks.on_job_finished(*job));
      }
    }
    waiting = std::move(still_waiting);
    return Status::ok();
  };
  // Every rank reaches agree() once per step, even after an error of its own, so that no
  // rank waits for one that has stopped.
  Status local = settle(jobs);
  while (true) {
    if (local.is_ok() && cancel && cancel->load()) local = {StatusCode::kCancelled, "training interrupted"};
    SCION_RETURN_IF_ERROR(comm_.agree(local));
    if (active.empty()) return Status::ok();
    const auto started = std::chrono::steady_clock::now();
    local = step(active, callbacks);
    if (!local.is_ok()) continue;
    step_timings_.back().seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    if (!first_step_end_) first_step_end_ = seconds_since_process_start();
    std::vector<TrainingJob*> candidates = active;
    candidates.insert(candidates.end(), waiting.begin(), waiting.end());
    local = settle(std::move(candidates));
  }
}

Status FamilyTrainer::choose_gradient_path(const TrainerCallbacks& callbacks) {
  if (gradient_path_chosen_) return Status::ok();
  gradient_path_chosen_ = true;
  // Collective even on the CPU, where it is one small all_gather: a rank on a GPU cannot
  // know that another is not without asking.
  std::string why_not;
  Result<std::unique_ptr<DeviceReducer>> reducer = make_nccl_reducer(comm_, backend_, &why_not);
  if (!reducer) return reducer.status();
  device_reducer_ = std::move(*reducer);
  if (!callbacks.on_note || backend_.device() != Device::kCuda) return Status::ok();
  if (device_reducer_)
    callbacks.on_note("the gradients are summed on the GPUs (" + device_reducer_->describe() + ")");
  else
    callbacks.on_note("the gradients are summed through the host (MPI), not NCCL: " + why_not);
  return Status::ok();
}

Status FamilyTrainer::step(const std::vector<TrainingJob*>& active,
                           const TrainerCallbacks& callbacks) {
  const std::size_t n = active.size();
  std::vector<double> loss_sum(n, 0.0);
  std::vector<std::int64_t> tokens(n, 0);
  std::vector<ShareGroup*> shares;  // of the active jobs, each once
  for (TrainingJob* job : active) {
    job->zero_grad();
    ShareGroup* share = job->share_group();
    if (share && std::find(shares.begin(), shares.end(), share) == shares.end()) shares.push_back(share);
  }
  for (ShareGroup* share : shares) share->zero_grad();
  SCION_RETURN_IF_ERROR(comm_.agree(forward_backward(active, loss_sum, tokens)));
  step_timings_.push_back({0, std::accumulate(tokens.begin(), tokens.end(), std::int64_t{0})});
  if (comm_.size() > 1) {
    SCION_RETURN_IF_ERROR(choose_gradient_path(callbacks));
    SCION_RETURN_IF_ERROR(
        all_reduce_step(comm_, backend_, device_reducer_.get(), active, shares, loss_sum));
  }

  // A job whose loss is not finite has diverged: its gradients are not finite either, so
  // it takes no update.
  for (std::size_t j = 0; j < n; ++j) {
    const float loss = static_cast<float>(loss_sum[j] / active[j]->micro_batches_per_step());
    if (!std::isfinite(loss)) active[j]->mark_diverged({active[j]->steps_done() + 1, loss_text(loss)});
  }
  spread_divergence(shares);
  const std::vector<float> lr = apply_updates(active, shares);
  std::vector<StepReport> reports;
  for (std::size_t j = 0; j < n; ++j) {
    TrainingJob& job = *active[j];
    if (job.divergence()) continue;
    StepReport report;
    report.job = &job;
    report.lr = lr[j];
    report.step = job.steps_done();
    report.loss = static_cast<float>(loss_sum[j] / job.micro_batches_per_step());
    report.tokens = tokens[j];
    if (job.validation_due()) {
      auto validation = job.validate(net_);
      if (!validation) return validation.status();
      job.record_validation(*validation);
      report.validation = *validation;
    }
    if (callbacks.on_step) SCION_RETURN_IF_ERROR(callbacks.on_step(report));
    reports.push_back(std::move(report));
  }
  if (callbacks.on_group_step) SCION_RETURN_IF_ERROR(callbacks.on_group_step(reports));
  return Status::ok();
}

Status FamilyTrainer::forward_backward(const std::vector<TrainingJob*>& active,
                                       std::vector<double>& loss_sum, std::vector<std::int64_t>& tokens) {
  const std::size_t n = active.size();
  // Micro-batch m carries every job that accumulates more than m micro-batches.
  int max_micro = 0;
  for (TrainingJob* job : active) max_micro = std::max(max_micro, job->micro_batches_per_step());
  for (int m = 0; m < max_micro; ++m) {
    std::vector<std::size_t> members;
    std::vector<data::Batch> batches;        // this rank's rows of each member's micro-batch
    std::vector<std::int64_t> denominators;  // targets of the whole micro-batch; 0: one rank
    batches.reserve(n);  // segments point into these batches
    for (std::size_t j = 0; j < n; ++j) {
      if (active[j]->micro_batches_per_step() <= m) continue;
      ScopedOpTimer data_time(options_.profile, OpClass::kData);
      data::Batch batch = active[j]->next_batch();
      tokens[j] += static_cast<std::int64_t>(batch.batch_size) * batch.length;
      std::int64_t denominator = 0;
      if (comm_.size() > 1) {
        denominator = loss_denominator(batch, active[j]->weights());
        batch = shard_rows(batch, comm_.rank(), comm_.size());
        if (batch.batch_size == 0) continue;  // fewer rows than ranks: this one adds zeros
      }
      members.push_back(j);
      batches.push_back(std::move(batch));
      denominators.push_back(denominator);
    }
    // Consecutive members share a pass while their rows fit max_rows_per_pass.
    for (std::size_t first = 0; first < members.size();) {
      // Groups never mix recompute settings (workbench/training_groups.h).
      FamilyBatch family{.training = true, .recompute = active.front()->recipe().recompute};
      std::int64_t rows = 0;
      std::size_t last = first;
      for (; last < members.size(); ++last) {
        const std::int64_t more = static_cast<std::int64_t>(batches[last].batch_size) * batches[last].length;
        if (last > first && rows + more > options_.max_rows_per_pass) break;
        rows += more;
        TrainingJob& job = *active[members[last]];
        Segment segment = job.segment_for(batches[last], job.dropout_seed(m));
        segment.loss_denominator = denominators[last];
        family.segments.push_back(segment);
      }
      auto out = net_.forward(family);
      if (!out) return out.status();
      SCION_RETURN_IF_ERROR(net_.backward());
      for (std::size_t s = first; s < last; ++s) loss_sum[members[s]] += (*out)[s - first].loss;
      first = last;
    }
  }
  return Status::ok();
}

std::vector<float> FamilyTrainer::apply_updates(const std::vector<TrainingJob*>& active,
                                                const std::vector<ShareGroup*>& shares) {
  // Every job's own update, then each ShareGroup's once, before any job validates.
  std::vector<float> lr(active.size());
  for (std::size_t j = 0; j < active.size(); ++j) {
    TrainingJob& job = *active[j];
    if (job.divergence()) continue;
    lr[j] = job.apply_step();
    if (auto name = job.first_non_finite_parameter())
      job.mark_diverged({job.steps_done(), "parameter '" + *name + "' is not finite after the update"});
  }
  spread_divergence(shares);
  for (ShareGroup* share : shares) {
    if (any_diverged(*share)) continue;
    share->apply_step();
    if (auto name = share->first_non_finite_parameter())
      for (TrainingJob* member : share->members())
        member->mark_diverged({share->steps_done(), "shared parameter '" + *name +
                                                        "' is not finite after the update"});
  }
  return lr;
}

}  // namespace scion::runtime
