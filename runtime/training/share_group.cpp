#include "runtime/training/share_group.h"

#include <algorithm>

#include "runtime/data/lr_schedule.h"
#include "runtime/training/training_job.h"

namespace scion::runtime {
namespace {

// Every shared parameter of the unit once, by its canonical key.
std::map<ParameterKey, Tensor> shared_views(const std::vector<const spec::Model*>& unit,
                                            const SharedModules& shares,
                                            const std::map<std::string, ParameterBinding>& params) {
  std::map<ParameterKey, Tensor> views;
  for (const spec::Model* m : unit)
    for (const auto& [name, key] : shares.shared_by(m->name))
      views.emplace(key, *params.at(m->name).find(name));
  return views;
}

std::vector<ViewSpec> gradient_views(const std::map<ParameterKey, Tensor>& shared) {
  std::vector<ViewSpec> views;
  for (const auto& [key, view] : shared) views.push_back({key.second, view.shape, DType::kF32});
  return views;
}

}  // namespace

Result<std::unique_ptr<ShareGroup>> ShareGroup::create(
    std::vector<const spec::Model*> unit, const SharedModules& shares,
    const std::map<std::string, ParameterBinding>& params, Backend& backend) {
  std::unique_ptr<ShareGroup> group(new ShareGroup(backend, std::move(unit)));
  const std::string modules = "the modules '" + group->owner().name + "' shares";
  const std::map<ParameterKey, Tensor> shared = shared_views(group->unit_, shares, params);
  auto grads = Arena::create(gradient_views(shared), backend, "the gradients of " + modules);
  if (!grads) return grads.status();
  group->grads_ = std::move(*grads);
  std::vector<TrainableTensor> tensors;
  for (const auto& [key, view] : shared) tensors.push_back({key.second, view, group->grads_.view(key.second)});
  for (const spec::Model* m : group->unit_) {
    ParameterBinding& binding = group->by_member_[m->name];
    for (const auto& [name, key] : shares.shared_by(m->name)) binding.bind(name, group->grads_.view(key.second));
  }
  auto optimizer = Optimizer::create(backend, group->owner().training->optimizer, std::move(tensors), modules);
  if (!optimizer) return optimizer.status();
  group->optimizer_ = std::move(*optimizer);
  return group;
}

bool ShareGroup::finished() const {
  return std::all_of(members_.begin(), members_.end(), [](const TrainingJob* j) { return j->finished(); });
}

std::int64_t ShareGroup::total_steps() const {
  std::int64_t steps = 0;
  for (const TrainingJob* job : members_) steps = std::max(steps, job->total_steps());
  return steps;
}

float ShareGroup::apply_step() {
  const spec::TrainingSpec& recipe = *owner().training;
  const float lr = data::learning_rate(steps_done(), total_steps(), recipe.schedule, recipe.optimizer.lr);
  optimizer_->step(lr, std::max(1, recipe.grad_accumulation));
  return lr;
}

std::vector<std::pair<std::string, Tensor>> ShareGroup::checkpoint_tensors() const {
  return optimizer_->checkpoint_tensors();
}

Status ShareGroup::restore(std::int64_t steps,
                           const std::map<std::string, std::span<const std::byte>>& values) {
  return optimizer_->restore(static_cast<int>(steps), values,
                             "the modules '" + owner().name + "' shares");
}

}  // namespace scion::runtime
