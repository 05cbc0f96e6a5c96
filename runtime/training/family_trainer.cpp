#include "runtime/training/family_trainer.h"

#include <algorithm>

namespace scion::runtime {

namespace {

// Whether `job` may be reported finished: it is, and so is every job it shares with.
bool done(const TrainingJob& job) {
  return job.finished() && (!job.share_group() || job.share_group()->finished());
}

}  // namespace

Status FamilyTrainer::run(const std::vector<TrainingJob*>& jobs, const TrainerCallbacks& callbacks,
                          const std::atomic<bool>* cancel) {
  std::vector<TrainingJob*> active, waiting;  // waiting: finished, reported once done()
  auto settle = [&](std::vector<TrainingJob*> candidates) -> Status {
    active.clear();
    std::vector<TrainingJob*> still_waiting;
    for (TrainingJob* job : candidates) {
      if (!job->finished()) {
        active.push_back(job);
      } else if (!done(*job)) {
        still_waiting.push_back(job);
      } else if (callbacks.on_job_finished) {
        SCION_RETURN_IF_ERROR(callbacks.on_job_finished(*job));
      }
    }
    waiting = std::move(still_waiting);
    return Status::ok();
  };
  SCION_RETURN_IF_ERROR(settle(jobs));
  while (!active.empty()) {
    if (cancel && cancel->load()) return {StatusCode::kCancelled, "training interrupted"};
    SCION_RETURN_IF_ERROR(step(active, callbacks));
    std::vector<TrainingJob*> candidates = active;
    candidates.insert(candidates.end(), waiting.begin(), waiting.end());
    SCION_RETURN_IF_ERROR(settle(std::move(candidates)));
  }
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

  // Micro-batch m carries every job that accumulates more than m micro-batches.
  int max_micro = 0;
  for (TrainingJob* job : active) max_micro = std::max(max_micro, job->micro_batches_per_step());
  for (int m = 0; m < max_micro; ++m) {
    std::vector<std::size_t> members;
    std::vector<data::Batch> batches;
    batches.reserve(n);  // segments point into these batches
    for (std::size_t j = 0; j < n; ++j) {
      if (active[j]->micro_batches_per_step() <= m) continue;
      members.push_back(j);
      batches.push_back(active[j]->next_batch());
      tokens[j] += static_cast<std::int64_t>(batches.back().batch_size) * batches.back().length;
    }
    // Consecutive members share a pass while their rows fit max_rows_per_pass.
    for (std::size_t first = 0; first < members.size();) {
      FamilyBatch family{.training = true};
      std::int64_t rows = 0;
      std::size_t last = first;
      for (; last < members.size(); ++last) {
        const std::int64_t more = static_cast<std::int64_t>(batches[last].batch_size) * batches[last].length;
        if (last > first && rows + more > options_.max_rows_per_pass) break;
        rows += more;
        TrainingJob& job = *active[members[last]];
        family.segments.push_back(job.segment_for(batches[last], job.dropout_seed(m)));
      }
      auto out = net_.forward(family);
      if (!out) return out.status();
      SCION_RETURN_IF_ERROR(net_.backward());
      for (std::size_t s = first; s < last; ++s) loss_sum[members[s]] += (*out)[s - first].loss;
      first = last;
    }
  }

  // Every job's own update, then each ShareGroup's once, before any job validates.
  std::vector<float> lr(n);
  for (std::size_t j = 0; j < n; ++j) lr[j] = active[j]->apply_step();
  for (ShareGroup* share : shares) share->apply_step();
  for (std::size_t j = 0; j < n; ++j) {
    TrainingJob& job = *active[j];
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
  }
  return Status::ok();
}

}  // namespace scion::runtime
