// TrainingJob: one model being trained, with everything that is its own.
//
// A job holds the model's resolved weights (views into a ParameterStore shared by the whole
// group, so a frozen trunk is held once), its own gradients, optimizer state, learning-rate
// schedule, data stream (own seed, batch size and order), validation rows (a split of its
// data, or a named dev set), early-stopping state, class weights, and with keep_best a
// copy of its trainable parameters at the best validation so far, which restore_best()
// puts back when the job ends (FamilyTrainer calls it before reporting the job finished).
// FamilyTrainer (family_trainer.h) runs several jobs that share one frozen trunk through co-batched
// steps; training a model alone is a group of one. A model with modules shared by a `share`
// declaration leaves them to its unit's ShareGroup (share_group.h): their gradients go to the
// group's buffers and the group's optimizer updates them. The job borrows the workspace, model and
// backend, which must outlive it. Not thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "base/status.h"
#include "runtime/arena.h"
#include "runtime/backend.h"
#include "runtime/data/batch_stream.h"
#include "runtime/data/shuffle.h"
#include "runtime/model/model_weights.h"
#include "runtime/model/optimizer.h"
#include "runtime/model/parameter_binding.h"
#include "runtime/model/parameter_table.h"
#include "runtime/model/transformer.h"
#include "runtime/training/share_group.h"
#include "spec/workspace.h"

namespace scion::runtime {

// One validation pass of a job: the loss and the metrics its task records
// (spec/metric_names.h), by name ("val_f1"); a metric undefined on these rows (a
// correlation of constant predictions, ROC-AUC without both classes) is left out.
struct ValidationResult {
  double loss = 0;
  std::map<std::string, double> metrics;  // val_loss included

  std::optional<double> metric(const std::string& name) const {
    auto it = metrics.find(name);
    return it == metrics.end() ? std::nullopt : std::optional<double>(it->second);
  }
};

// The validation whose parameters a keep_best job stores: its step, the metric and its
// value, and the last validation's value of the same metric.
struct KeptValidation {
  std::int64_t step = 0;
  std::string metric;
  double value = 0;
  std::int64_t last_step = 0;
  std::optional<double> last_value;
};

// Why a job stopped with non-finite values: the optimizer step at which it was seen and
// what was not finite ("loss is NaN", "parameter 'head.x.weight' is not finite").
struct Divergence {
  std::int64_t step = 0;
  std::string what;
};

class TrainingJob {
 public:
  // `params` binds every name of the model's parameter table to initialised values (the
  // inherited ones loaded, the new ones from initialize_new_parameters). The training
  // spec's dataset is `data`; a validation split is taken from it when the recipe asks.
  // `share`: the ShareGroup of the model's unit when it shares modules (the job attaches
  // itself to it), else null. `validation`: the recipe's named dev set, tokenized as
  // `data` is; null without one.
  // Errors: kSpecError for a recipe the data cannot serve (see BatchStream::create; a
  // regression head whose data holds another number of targets; keep_best on a model
  // that shares modules).
  static Result<std::unique_ptr<TrainingJob>> create(
      const spec::Workspace& workspace, const spec::Model& model, const ParameterBinding& params,
      std::shared_ptr<const data::TokenizedDataset> data, Backend& backend,
      ShareGroup* share = nullptr,
      std::shared_ptr<const data::TokenizedDataset> validation = nullptr);

  const spec::Model& model() const { return model_; }
  const spec::TrainingSpec& recipe() const { return *model_.training; }
  const std::vector<ParameterSpec>& table() const { return table_; }
  const ParameterBinding& parameters() const { return params_; }
  const ModelWeights& weights() const { return weights_; }
  ShareGroup* share_group() const { return share_; }
  // The gradient views the model's backward pass accumulates into (shared ones included).
  const ParameterBinding& gradients() const { return grads_->binding(); }

  std::int64_t total_steps() const { return total_steps_; }
  std::int64_t steps_done() const { return optimizer_->steps_taken(); }
  bool stopped_early() const { return stopped_early_; }
  bool finished() const { return stopped_early_ || steps_done() >= total_steps_; }
  // Set once the job's loss or one of its trainable parameters stopped being finite: the
  // job trains no further and none of its values may be stored or checkpointed.
  const std::optional<Divergence>& divergence() const { return divergence_; }
  // Keeps the first divergence when called again.
  void mark_diverged(Divergence divergence);
  // The first trainable parameter of the job's own (not a ShareGroup's) holding a NaN or
  // an infinity; nullopt when every one is finite.
  std::optional<std::string> first_non_finite_parameter() const;
  int micro_batches_per_step() const { return recipe().grad_accumulation; }
  std::int64_t train_rows() const { return static_cast<std::int64_t>(train_rows_.size()); }
  std::int64_t validation_rows() const { return static_cast<std::int64_t>(validation_rows_.size()); }

  // The next micro-batch of this job's own data order.
  data::Batch next_batch() { return stream_.next(); }
  // A segment over `batch` (which must outlive the forward/backward that uses it).
  Segment segment_for(const data::Batch& batch, std::uint64_t dropout_seed) const;
  // Dropout seed of micro-batch `micro` of the next step: depends only on the job's seed
  // and position, so co-batched and solo training draw the same masks.
  std::uint64_t dropout_seed(int micro) const;

  void zero_grad() { grads_->zero(); }
  // The backend whose memory holds the job's parameters, gradients and optimizer state.
  Backend& backend() const { return backend_; }
  // Its own gradients, shared modules' left out (see GradientSet::own_values).
  Tensor own_gradient_values() const { return grads_->own_values(); }

  // What a checkpoint must hold to continue this job exactly: every trainable parameter
  // ("param.<name>") and the optimizer state ("opt.<state name>"), its shared modules
  // left to its ShareGroup, as views of backend memory. The data stream and
  // dropout seeds follow from the step count. Early stopping restarts its patience.
  std::vector<std::pair<std::string, Tensor>> checkpoint_tensors() const;
  // Continues from a checkpoint taken after `steps` optimizer steps; `values` maps each
  // name of checkpoint_tensors() to its bytes. Errors: kCorruption for a missing tensor
  // or a size that does not match.
  Status restore(std::int64_t steps, const std::map<std::string, std::span<const std::byte>>& values);
  // Averages the accumulated gradients over the micro-batches, clips, and updates the
  // parameters at the scheduled learning rate. Returns that learning rate.
  float apply_step();
  float learning_rate() const;

  // Whether a validation pass is due after the step just taken: every `eval_every` steps,
  // or at each epoch boundary, and always after the last step.
  bool validation_due() const;
  // Runs the validation rows through `net` (this job alone, no dropout) and computes the
  // task's metrics on them.
  Result<ValidationResult> validate(SegmentedTransformer& net);
  // Feeds a validation result to early stopping and to keep_best (a better value copies
  // the trainable parameters aside); returns true when the job should stop.
  bool record_validation(const ValidationResult& result);
  // With keep_best: puts the parameters of the best validation back (when it was not the
  // last) and records which one that was in kept(); nothing without keep_best or when no
  // validation recorded the metric. Call once, when the job has finished.
  void restore_best();
  const std::optional<KeptValidation>& kept() const { return kept_; }
  // The class weights the loss uses (explicit, or balanced from the training rows); empty:
  // unweighted.
  const std::vector<float>& class_weights() const { return weights_.classifier.host_class_weights; }

 private:
  TrainingJob(const spec::Model& model, Backend& backend, data::BatchStream stream)
      : model_(model), backend_(backend), stream_(std::move(stream)) {}

  // The class weights the recipe asks for, on the backend (weights_.classifier).
  Status set_class_weights(const spec::TrainingSpec& recipe);
  // The validation rows' metrics from the outputs collected over them.
  struct ValidationOutputs;
  void add_validation_outputs(const data::Batch& batch, const SegmentResult& result,
                              ValidationOutputs& out) const;
  void compute_metrics(const ValidationOutputs& out, ValidationResult& result) const;

  const spec::Model& model_;
  Backend& backend_;
  std::vector<ParameterSpec> table_;
  ParameterBinding params_;
  std::unique_ptr<GradientSet> grads_;
  ShareGroup* share_ = nullptr;
  ModelWeights weights_;
  std::unique_ptr<Optimizer> optimizer_;
  data::BatchStream stream_;
  std::shared_ptr<const data::TokenizedDataset> data_;
  std::shared_ptr<const data::TokenizedDataset> validation_data_;  // data_, or the dev set
  std::vector<std::int64_t> train_rows_, validation_rows_;
  std::vector<std::string> labels_;  // the head's outputs (classification objective)
  float threshold_ = 0.5f;           // multi-label
  std::int64_t total_steps_ = 0;
  std::int64_t steps_per_epoch_ = 1;

  std::optional<double> best_metric_;
  int evaluations_without_improvement_ = 0;
  Arena class_weight_values_;  // (K) on the backend, when weighted
  // keep_best: the own trainable parameters, their copies at the best validation, which
  // step that was with its value, and the last validation's value.
  std::vector<TrainableTensor> own_;
  Arena best_values_;
  std::optional<double> kept_value_, last_kept_metric_;
  std::int64_t kept_step_ = 0, last_validated_step_ = 0;
  std::optional<KeptValidation> kept_;
  bool stopped_early_ = false;
  std::optional<Divergence> divergence_;
};

}  // namespace scion::runtime
