// What training reports: each model's outcome, each co-batched group's, the whole
// command's, and the progress of a group as it goes. Plain values: workbench::train makes
// them (workbench/training.h), cli/training_session.cpp prints them.
//
// A status is an OutcomeStatus everywhere; its words ("up to date", "not trained: 'a'
// diverged") are made in one place, outcome_status_name / outcome_words. A model's and a
// group's outcome each have one JSON form, the one `--json` prints (docs/json.md, "scion
// run"); under mpirun the ranks exchange their outcomes in the same form (CBOR-encoded,
// which keeps a NaN loss) and read them back with the *_from_json functions.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/status.h"
#include "runtime/training/training_job.h"

namespace scion::workbench {

// How a model (or a group) ended, or where it stands. A group is only ever kTrained,
// kInterrupted or kFailed.
enum class OutcomeStatus {
  kUpToDate,     // stored for its recipe already: nothing to do
  kImported,     // imported from its declared checkpoint
  kRestored,     // a stored version of its recipe made current again
  kRunning,      // set up, training (what a model is while its group trains)
  kTrained,      // trained and stored
  kInterrupted,  // stopped by an interruption; its run is marked interrupted
  kFailed,       // stopped by an error
  kDiverged,     // its loss or parameters stopped being finite; nothing stored
  kNotTrained,   // left out: an ancestor diverged (ModelOutcome::blocked_by)
};

// "up to date", "imported", "restored", "running", "trained", "interrupted", "failed",
// "diverged", "not trained".
std::string_view outcome_status_name(OutcomeStatus status);
// The status whose words begin `words` (so "not trained: 'a' diverged" reads back as
// kNotTrained); nullopt for words no status has.
std::optional<OutcomeStatus> outcome_status_from_name(std::string_view words);

// What one model's training produced, for the summary.
struct ModelOutcome {
  ModelOutcome(std::string model, OutcomeStatus state, std::int64_t run = 0)
      : name(std::move(model)), status(state), run_id(run) {}

  std::string name;
  OutcomeStatus status;
  std::string blocked_by;  // kNotTrained: the ancestor that diverged
  std::int64_t run_id = 0;
  std::optional<std::int64_t> restored_run;  // restored: the run that made the version
  std::int64_t steps = 0;         // the training step reached, counted from the run's start
  std::int64_t resumed_from = 0;  // the checkpoint's step it continued from; 0: from the start
  double final_loss = 0;
  std::optional<double> val_loss, val_accuracy;
  std::map<std::string, double>
      validation;  // the last validation's metrics (val_loss, val_f1, ...)
  std::optional<runtime::KeptValidation>
      kept;  // keep_best: the validation whose parameters were stored
  std::string keep_best_unmet;  // keep_best chose none: why the last step was stored
  double seconds = 0;
};

// The status in words, with its reason where it has one: "not trained: 'hot' diverged".
std::string outcome_words(const ModelOutcome& outcome);

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

struct GroupOutcome {
  std::vector<std::string> models;
  OutcomeStatus status = OutcomeStatus::kTrained;  // trained | interrupted | failed
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
  // did not say). docs/benchmarks.md, "Like with like".
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

// A model's outcome as `--json` prints it: `model`, `status` (outcome_words), and
// `blocked_by`, `restored_run`, `run`, `steps`, `resumed_from`, `final_loss`, `seconds`,
// `val_loss`, `val_accuracy` where they apply, and always `validation` (`{}` without one)
// and `kept` (null without keep_best's choice) (docs/json.md). A NaN loss prints as null.
nlohmann::json model_outcome_json(const ModelOutcome& outcome);
// Reads model_outcome_json's form back (a null loss as NaN); kCorruption names what is
// missing or of another type.
Result<ModelOutcome> model_outcome_from_json(const nlohmann::json& json);

// A group's outcome as `--json` prints it (docs/json.md), and read back.
nlohmann::json group_outcome_json(const GroupOutcome& group);
Result<GroupOutcome> group_outcome_from_json(const nlohmann::json& json);

// keep_best's choice as `--json` prints it and the run records it ({step, metric, value,
// last_step, last_value}), and in words ("kept step 40 of 60: the best val_f1 ..."); and
// kept_json's form read back (kCorruption names what is missing or of another type).
nlohmann::json kept_json(const runtime::KeptValidation& kept);
std::string kept_message(const runtime::KeptValidation& kept);
// keep_best's metric had no value at any validation: the message the run's output and
// record carry ("keep_best: val_auc had no value at any validation ...").
std::string keep_best_unmet_message(const std::string& metric);
Result<runtime::KeptValidation> kept_from_json(const nlohmann::json& json);

// What a training command ends with: outcome.status, or, when that is ok and models
// diverged, kDiverged with the last divergence's message (outcome.diverged holds all).
Status training_status(const TrainingOutcome& outcome);

}  // namespace scion::workbench
