#include "runtime/training/training_job.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "base/seeded_rng.h"
#include "runtime/data/lr_schedule.h"
#include "runtime/data/shuffle.h"

namespace scion::runtime {
namespace {

bool lower_is_better(const std::string& metric) { return metric != "val_accuracy"; }

// Index of the largest of K logits.
int argmax(const float* logits, int K) {
  return static_cast<int>(std::max_element(logits, logits + K) - logits);
}

}  // namespace

Result<std::unique_ptr<TrainingJob>> TrainingJob::create(
    const spec::Workspace& workspace, const spec::Model& model, const ParameterBinding& params,
    std::shared_ptr<const data::TokenizedDataset> data, Backend& backend, ShareGroup* share) {
  const spec::TrainingSpec& recipe = *model.training;
  const spec::Architecture& arch = workspace.architecture_of(model);

  auto split = data::split_validation(static_cast<std::int64_t>(data->rows.size()),
                                      recipe.validation_split, recipe.seed);
  if (!split) return split.status();
  data::BatchStreamOptions options = data::batch_options_for(recipe, arch);
  auto stream = data::BatchStream::create(data, split->train, options);
  if (!stream) return stream.status();

  std::unique_ptr<TrainingJob> job(new TrainingJob(model, backend, std::move(*stream)));
  job->data_ = std::move(data);
  job->train_rows_ = std::move(split->train);
  job->validation_rows_ = std::move(split->validation);
  job->table_ = parameter_table(workspace, model);
  job->params_ = params;
  const ParameterBinding shared = share ? share->gradients_for(model.name) : ParameterBinding{};
  auto grads = GradientSet::create(job->table_, backend, model.name, shared);
  if (!grads) return grads.status();
  job->grads_ = std::make_unique<GradientSet>(std::move(*grads));
  auto weights = resolve_model(workspace, model, recipe.objective, job->params_,
                               &job->grads_->binding());
  if (!weights) return weights.status();
  job->weights_ = std::move(*weights);
  std::vector<TrainableTensor> own;
  for (TrainableTensor& t : trainable_tensors(job->table_, job->params_, job->grads_->binding()))
    if (!shared.find(t.name)) own.push_back(std::move(t));
  auto optimizer = Optimizer::create(backend, recipe.optimizer, std::move(own), "'" + model.name + "'");
  if (!optimizer) return optimizer.status();
  job->optimizer_ = std::move(*optimizer);

  // Steps: given, or epochs over the training rows in optimizer steps (micro-batches
  // grouped by gradient accumulation, a partial group at the end counting as a step).
  const std::int64_t batches = job->stream_.batches_per_epoch();
  const std::int64_t accumulation = std::max(1, recipe.grad_accumulation);
  job->steps_per_epoch_ = std::max<std::int64_t>(1, (batches + accumulation - 1) / accumulation);
  job->total_steps_ = recipe.steps > 0 ? recipe.steps : recipe.epochs * job->steps_per_epoch_;
  if (share) {
    job->share_ = share;
    share->attach(job.get());
  }
  return job;
}

Segment TrainingJob::segment_for(const data::Batch& batch, std::uint64_t dropout_seed) const {
  Segment segment;
  segment.model = &weights_;
  segment.batch = batch.batch_size;
  segment.length = batch.length;
  segment.tokens = batch.tokens.data();
  segment.lengths = batch.lengths.data();
  const bool classification = recipe().objective == spec::Objective::kClassification;
  segment.targets = classification ? batch.labels.data() : batch.targets.data();
  segment.dropout_seed = dropout_seed;
  return segment;
}

std::uint64_t TrainingJob::dropout_seed(int micro) const {
  return base::splitmix64(base::splitmix64(recipe().seed ^ 0x5c1035eedULL) +
                          static_cast<std::uint64_t>(steps_done()) * 64 +
                          static_cast<std::uint64_t>(micro));
}

float TrainingJob::learning_rate() const {
  return data::learning_rate(steps_done(), total_steps_, recipe().schedule, recipe().optimizer.lr);
}

float TrainingJob::apply_step() {
  const float lr = learning_rate();
  optimizer_->step(lr, std::max(1, recipe().grad_accumulation));
  return lr;
}

void TrainingJob::mark_diverged(Divergence divergence) {
  if (!divergence_) divergence_ = std::move(divergence);
}

std::optional<std::string> TrainingJob::first_non_finite_parameter() const {
  return optimizer_->first_non_finite_parameter();
}

std::vector<std::pair<std::string, Tensor>> TrainingJob::checkpoint_tensors() const {
  return optimizer_->checkpoint_tensors();
}

Status TrainingJob::restore(std::int64_t steps,
                            const std::map<std::string, std::span<const std::byte>>& values) {
  SCION_RETURN_IF_ERROR(optimizer_->restore(static_cast<int>(steps), values, "'" + model_.name + "'"));
  stream_.seek(steps * std::max(1, recipe().grad_accumulation));
  return Status::ok();
}

bool TrainingJob::validation_due() const {
  if (validation_rows_.empty()) return false;
  const std::int64_t done = steps_done();
  if (done >= total_steps_) return true;
  const std::int64_t every = recipe().eval_every > 0 ? recipe().eval_every : steps_per_epoch_;
  return done % every == 0;
}

Result<ValidationResult> TrainingJob::validate(SegmentedTransformer& net) {
  data::BatchStreamOptions options = stream_.options();
  options.shuffle = false;
  auto stream = data::BatchStream::create(data_, validation_rows_, options);
  if (!stream) return stream.status();
  double loss_sum = 0;
  std::int64_t counted = 0, correct = 0, examples = 0;
  const bool classification = recipe().objective == spec::Objective::kClassification;
  for (std::int64_t b = 0; b < stream->batches_per_epoch(); ++b) {
    const data::Batch batch = stream->next();
    FamilyBatch family{.segments = {segment_for(batch, 0)}, .training = false};
    auto out = net.forward(family);
    if (!out) return out.status();
    const SegmentResult& r = out->front();
    loss_sum += static_cast<double>(r.loss) * static_cast<double>(r.counted);
    counted += r.counted;
    if (classification) {
      const int K = static_cast<int>(r.logits.shape.back());
      for (int i = 0; i < batch.batch_size; ++i)
        correct += argmax(r.logits.f32() + static_cast<std::int64_t>(i) * K, K) == batch.labels[i];
      examples += batch.batch_size;
    }
  }
  ValidationResult result;
  result.loss = counted > 0 ? loss_sum / static_cast<double>(counted) : 0.0;
  if (classification && examples > 0)
    result.accuracy = static_cast<double>(correct) / static_cast<double>(examples);
  return result;
}

bool TrainingJob::record_validation(const ValidationResult& result) {
  const spec::EarlyStoppingSpec& rule = recipe().early_stopping;
  const bool by_accuracy = rule.metric == "val_accuracy" && result.accuracy.has_value();
  const double value = by_accuracy ? *result.accuracy : result.loss;
  const bool improved = !best_metric_ || (lower_is_better(rule.metric) ? value < *best_metric_
                                                                       : value > *best_metric_);
  if (improved) {
    best_metric_ = value;
    evaluations_without_improvement_ = 0;
  } else {
    ++evaluations_without_improvement_;
  }
  if (rule.patience > 0 && evaluations_without_improvement_ >= rule.patience) stopped_early_ = true;
  return stopped_early_;
}

}  // namespace scion::runtime
