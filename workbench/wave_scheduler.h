// WaveScheduler: which of a plan's groups this rank trains, wave by wave, and with whom
// (docs/distributed.md). The plan's waves run in order (a wave's models may be adapted
// from the ones before). A wave runs data parallel (every rank trains each group on its
// share of the rows; rank 0 alone writes the store) or task parallel (each rank trains
// the groups of the trunks assigned to it, workbench/rank_assignment.h, alone, and writes
// them itself). One process runs every wave data parallel, alone.
//
// After a task-parallel wave every rank learns what the others trained in it
// (exchange_wave_outcomes), so that the next wave knows which parents diverged and every
// rank ends with the same TrainingOutcome. Pure except for the exchange; not thread-safe.
#pragma once

#include <cstddef>
#include <vector>

#include "base/status.h"
#include "runtime/comm/communicator.h"
#include "workbench/plan.h"
#include "workbench/training_outcome.h"
#include "workbench/training_request.h"

namespace scion::workbench {

class WaveScheduler {
 public:
  // `rank` of `ranks`; `parallel` is the request's (TrainRequest::parallel).
  WaveScheduler(const Plan& plan, Parallelism parallel, int ranks, int rank);

  std::size_t waves() const { return waves_; }
  // Whether `wave` runs task parallel: asked for, or (auto) its groups span at least as
  // many trunks as there are ranks. Never with one rank.
  bool task_parallel(std::size_t wave) const;
  // Whether this rank writes the store for the groups it trains in `wave`.
  bool writes(std::size_t wave) const { return task_parallel(wave) || rank_ == 0; }
  // The indices (into Plan::groups, in plan order) of the groups this rank trains in
  // `wave`: all of the wave's in a data-parallel wave, its trunks' in a task-parallel one.
  std::vector<std::size_t> groups_of(std::size_t wave) const;

 private:
  const Plan& plan_;
  Parallelism parallel_;
  int ranks_, rank_;
  std::size_t waves_ = 0;
  std::vector<bool> mine_;  // by group: this rank's trunk
};

// How long each list of a TrainingOutcome was when a wave began.
struct OutcomeMark {
  std::size_t models = 0, groups = 0, diverged = 0, checkpointed = 0;
};
OutcomeMark mark_of(const TrainingOutcome& outcome);

// Every rank sends what it added to `outcome` since `since` (model_outcome_json and
// group_outcome_json, in CBOR, which keeps a NaN loss); each rank then rebuilds that part
// of `outcome` from all of them, rank by rank, so every rank holds the same. A trunk's
// groups are on one rank, so each model's entry comes from exactly one rank.
// Errors: the communicator's; a rank's message that cannot be read (kCorruption).
Status exchange_wave_outcomes(runtime::Communicator& comm, const OutcomeMark& since,
                              TrainingOutcome& outcome);

}  // namespace scion::workbench
