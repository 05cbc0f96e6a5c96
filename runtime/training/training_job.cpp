#include "runtime/training/training_job.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "base/seeded_rng.h"
#include "runtime/data/lr_schedule.h"
#include "runtime/data/shuffle.h"
#include "runtime/metrics/classification_metrics.h"
#include "runtime/metrics/entity_metrics.h"
#include "runtime/metrics/multi_label_metrics.h"
#include "runtime/metrics/regression_metrics.h"
#include "spec/metric_names.h"

namespace scion::runtime {
namespace {

// The names of what the model's head outputs: its head's labels, or the dataset's for a
// base trained for classification.
std::vector<std::string> head_labels(const spec::Workspace& ws, const spec::Model& model) {
  if (const spec::HeadSpec* head = ws.head_of(model)) return head->labels;
  for (const spec::Model* m : ws.ancestry(model))
    if (m->is_base() && m->training)
      if (const spec::Dataset* d = ws.find_dataset(m->training->dataset)) return d->labels;
  return {};
}

// scikit-learn's balanced weights n / (K · n_c) from the training rows' class counts (for
// tags, every tagged word); a class no row has weighs 1.
std::vector<float> balanced_weights(const data::TokenizedDataset& data,
                                    const std::vector<std::int64_t>& rows, int classes) {
  std::vector<double> count(static_cast<std::size_t>(classes), 0.0);
  double total = 0;
  for (std::int64_t row : rows) {
    const auto r = static_cast<std::size_t>(row);
    if (data.label_type == spec::LabelType::kTags) {
      for (std::int32_t tag : data.tags[r]) count[static_cast<std::size_t>(tag)] += 1;
      total += static_cast<double>(data.tags[r].size());
    } else {
      count[static_cast<std::size_t>(data.labels[r])] += 1;
      total += 1;
    }
  }
  std::vector<float> weights;
  for (double n : count)
    weights.push_back(n > 0 ? static_cast<float>(total / (classes * n)) : 1.0f);
  return weights;
}

}  // namespace

// What validation collects from its batches, on the host.
struct TrainingJob::ValidationOutputs {
  std::vector<std::int32_t> truth;  // classification: true classes
  std::vector<float> scores;        // rows × K: class or label probabilities, or predictions
  std::vector<float> targets;       // rows × K: regression and multi-label targets
  std::vector<std::vector<std::int32_t>> true_tags, predicted_tags;  // per sentence, per word
};

Result<std::unique_ptr<TrainingJob>> TrainingJob::create(
    const spec::Workspace& workspace, const spec::Model& model, const ParameterBinding& params,
    std::shared_ptr<const data::TokenizedDataset> data, Backend& backend, ShareGroup* share,
    std::shared_ptr<const data::TokenizedDataset> validation) {
  const spec::TrainingSpec& recipe = *model.training;
  const spec::Architecture& arch = workspace.architecture_of(model);
  if (!recipe.keep_best.empty() && share)
    return spec_error("model '" + model.name +
                      "' keeps its best validation (keep_best), but it "
                      "shares modules with other models, whose values follow every step; "
                      "remove keep_best or the share");

  auto split = data::split_validation(static_cast<std::int64_t>(data->rows.size()),
                                      validation ? 0.0f : recipe.validation_split, recipe.seed);
  if (!split) return split.status();
  if (validation) {
    split->validation.resize(static_cast<std::size_t>(validation->row_count()));
    for (std::int64_t r = 0; r < validation->row_count(); ++r)
      split->validation[static_cast<std::size_t>(r)] = r;
  }
  data::BatchStreamOptions options = data::batch_options_for(recipe, arch);
  auto stream = data::BatchStream::create(data, split->train, options);
  if (!stream) return stream.status();

  std::unique_ptr<TrainingJob> job(new TrainingJob(model, backend, std::move(*stream)));
  job->data_ = std::move(data);
  job->validation_data_ = validation ? std::move(validation) : job->data_;
  job->train_rows_ = std::move(split->train);
  job->validation_rows_ = std::move(split->validation);
  if (recipe.objective == spec::Objective::kClassification) {
    job->labels_ = head_labels(workspace, model);
    if (const spec::HeadSpec* head = workspace.head_of(model))
      job->threshold_ = head->decision_threshold();
  }
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
  const int outputs = job->weights_.has_classifier ? job->weights_.classifier.linear.out : 0;
  for (const data::TokenizedDataset* d : {job->data_.get(), job->validation_data_.get()})
    if (job->weights_.has_classifier && d->target_width() > 0 && d->target_width() != outputs)
      return spec_error(fmt::format(
          "model '{}': its head has {} output{} but the rows of its {} hold {} target value{}; "
          "give the head one label per target",
          model.name, outputs, outputs == 1 ? "" : "s",
          d == job->data_.get() ? "training data" : "validation data", d->target_width(),
          d->target_width() == 1 ? "" : "s"));
  SCION_RETURN_IF_ERROR(job->set_class_weights(recipe));
  std::vector<TrainableTensor> own;
  for (TrainableTensor& t : trainable_tensors(job->table_, job->params_, job->grads_->binding()))
    if (!shared.find(t.name)) own.push_back(std::move(t));
  if (!recipe.keep_best.empty()) {
    std::vector<ViewSpec> copies;
    for (const TrainableTensor& t : own) copies.push_back({t.name, t.param.shape, t.param.dtype});
    auto best =
        Arena::create(copies, backend, "the best validation's parameters of '" + model.name + "'");
    if (!best) return best.status();
    job->best_values_ = std::move(*best);
    job->own_ = own;
  }
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
  segment.token_types = batch.token_types.empty() ? nullptr : batch.token_types.data();
  const bool head = recipe().objective == spec::Objective::kClassification;
  const spec::HeadTask task = head ? weights_.classifier.task : spec::HeadTask::kClassification;
  if (task == spec::HeadTask::kRegression || task == spec::HeadTask::kMultiLabel)
    segment.values = batch.values.data();
  else if (head && task == spec::HeadTask::kClassification)
    segment.targets = batch.labels.data();
  else
    segment.targets = batch.targets.data();
  segment.dropout_seed = dropout_seed;
  segment.first_row = batch.first_row;
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

Status TrainingJob::set_class_weights(const spec::TrainingSpec& recipe) {
  const spec::ClassWeightsSpec& spec = recipe.class_weights;
  if (spec.kind == spec::ClassWeightsSpec::Kind::kNone || !weights_.has_classifier)
    return Status::ok();
  const int classes = weights_.classifier.linear.out;
  std::vector<float> values = spec.kind == spec::ClassWeightsSpec::Kind::kExplicit
                                  ? spec.values
                                  : balanced_weights(*data_, train_rows_, classes);
  if (static_cast<int>(values.size()) != classes)
    return spec_error(fmt::format("model '{}': {} class weights for {} classes", model_.name,
                                  values.size(), classes));
  auto arena = Arena::create({{"class_weights", {classes}, DType::kF32}}, backend_,
                             "the class weights of '" + model_.name + "'");
  if (!arena) return arena.status();
  class_weight_values_ = std::move(*arena);
  const Tensor& view = class_weight_values_.view("class_weights");
  backend_.copy_to_device(view.data, values.data(), values.size() * sizeof(float));
  weights_.classifier.class_weights = view.f32();
  weights_.classifier.host_class_weights = std::move(values);
  return Status::ok();
}

void TrainingJob::add_validation_outputs(const data::Batch& batch, const SegmentResult& result,
                                         ValidationOutputs& out) const {
  const std::vector<float> logits = copy_to_host(backend_, result.logits);
  const auto K = static_cast<std::size_t>(result.logits.shape.back());
  switch (weights_.classifier.task) {
    case spec::HeadTask::kClassification:
      for (int i = 0; i < batch.batch_size; ++i) {
        const std::vector<float> p = softmax({logits.data() + i * K, K});
        out.scores.insert(out.scores.end(), p.begin(), p.end());
        out.truth.push_back(batch.labels[static_cast<std::size_t>(i)]);
      }
      return;
    case spec::HeadTask::kMultiLabel: {
      const std::vector<float> p = sigmoid(logits);
      out.scores.insert(out.scores.end(), p.begin(), p.end());
      out.targets.insert(out.targets.end(), batch.values.begin(), batch.values.end());
      return;
    }
    case spec::HeadTask::kRegression:
      out.scores.insert(out.scores.end(), logits.begin(), logits.end());
      out.targets.insert(out.targets.end(), batch.values.begin(), batch.values.end());
      return;
    case spec::HeadTask::kTokenClassification: {
      const auto S = static_cast<std::size_t>(result.logits.shape.at(1));
      const std::size_t P = S - static_cast<std::size_t>(batch.length);
      for (int b = 0; b < batch.batch_size; ++b) {
        std::vector<std::int32_t> truth, predicted;
        for (int t = 0; t < batch.length; ++t) {
          const std::int32_t tag = batch.targets[static_cast<std::size_t>(b) * batch.length + t];
          if (tag == data::kIgnoreIndex) continue;
          truth.push_back(tag);
          predicted.push_back(argmax({logits.data() + (b * S + P + t) * K, K}));
        }
        out.true_tags.push_back(std::move(truth));
        out.predicted_tags.push_back(std::move(predicted));
      }
      return;
    }
  }
}

void TrainingJob::compute_metrics(const ValidationOutputs& out, ValidationResult& result) const {
  auto& m = result.metrics;
  switch (weights_.classifier.task) {
    case spec::HeadTask::kClassification: {
      const ClassificationMetrics c = classification_metrics(labels_, out.truth, out.scores);
      m["val_accuracy"] = c.accuracy;
      m["val_f1"] = c.macro_f1;
      m["val_micro_f1"] = c.micro_f1;
      m["val_weighted_f1"] = c.weighted_f1;
      m["val_mcc"] = c.mcc;
      m["val_ece"] = c.ece;
      if (c.roc_auc) m["val_auc"] = *c.roc_auc;
      return;
    }
    case spec::HeadTask::kMultiLabel: {
      const MultiLabelMetrics c = multi_label_metrics(labels_, out.scores, out.targets, threshold_);
      m["val_f1"] = c.macro_f1;
      m["val_micro_f1"] = c.micro_f1;
      m["val_subset_accuracy"] = c.subset_accuracy;
      return;
    }
    case spec::HeadTask::kRegression: {
      const RegressionMetrics c = regression_metrics(labels_, out.scores, out.targets);
      m["val_rmse"] = c.rmse;
      m["val_mae"] = c.mae;
      if (c.pearson) m["val_pearson"] = *c.pearson;
      if (c.spearman) m["val_spearman"] = *c.spearman;
      return;
    }
    case spec::HeadTask::kTokenClassification: {
      const EntityMetrics c = entity_metrics(labels_, out.true_tags, out.predicted_tags);
      m["val_f1"] = c.f1;
      m["val_precision"] = c.precision;
      m["val_recall"] = c.recall;
      m["val_accuracy"] = c.accuracy;
      return;
    }
  }
}

Result<ValidationResult> TrainingJob::validate(SegmentedTransformer& net) {
  data::BatchStreamOptions options = stream_.options();
  options.shuffle = false;
  auto stream = data::BatchStream::create(validation_data_, validation_rows_, options);
  if (!stream) return stream.status();
  double loss_sum = 0, denominator = 0;
  const bool head = recipe().objective == spec::Objective::kClassification;
  ValidationOutputs outputs;
  for (std::int64_t b = 0; b < stream->batches_per_epoch(); ++b) {
    const data::Batch batch = stream->next();
    FamilyBatch family{.segments = {segment_for(batch, 0)}, .training = false};
    auto out = net.forward(family);
    if (!out) return out.status();
    const SegmentResult& r = out->front();
    loss_sum += static_cast<double>(r.loss) * r.denominator;
    denominator += r.denominator;
    if (head) add_validation_outputs(batch, r, outputs);
  }
  ValidationResult result;
  result.loss = denominator > 0 ? loss_sum / denominator : 0.0;
  result.metrics["val_loss"] = result.loss;
  if (head) compute_metrics(outputs, result);
  return result;
}

bool TrainingJob::record_validation(const ValidationResult& result) {
  const spec::EarlyStoppingSpec& rule = recipe().early_stopping;
  const auto better = [](const std::string& metric, double value,
                         const std::optional<double>& best) {
    return !best || (spec::lower_is_better(metric) ? value < *best : value > *best);
  };
  // A metric undefined on these rows (a constant prediction's correlation) neither
  // improves nor counts against patience.
  if (const std::optional<double> value = result.metric(rule.metric)) {
    if (better(rule.metric, *value, best_metric_)) {
      best_metric_ = *value;
      evaluations_without_improvement_ = 0;
    } else {
      ++evaluations_without_improvement_;
    }
  }
  if (!recipe().keep_best.empty()) {
    last_validated_step_ = steps_done();
    last_kept_metric_ = result.metric(recipe().keep_best);
    if (last_kept_metric_ && better(recipe().keep_best, *last_kept_metric_, kept_value_)) {
      kept_value_ = last_kept_metric_;
      kept_step_ = steps_done();
      for (const TrainableTensor& t : own_)
        backend_.copy(best_values_.view(t.name).f32(), t.param.f32(), t.param.numel());
    }
  }
  if (rule.patience > 0 && evaluations_without_improvement_ >= rule.patience) stopped_early_ = true;
  return stopped_early_;
}

void TrainingJob::restore_best() {
  if (recipe().keep_best.empty() || !kept_value_ || kept_) return;
  if (kept_step_ != steps_done())
    for (const TrainableTensor& t : own_)
      backend_.copy(t.param.f32(), best_values_.view(t.name).f32(), t.param.numel());
  kept_ = KeptValidation{.step = kept_step_,
                         .metric = recipe().keep_best,
                         .value = *kept_value_,
                         .last_step = last_validated_step_,
                         .last_value = last_kept_metric_};
}

}  // namespace scion::runtime
