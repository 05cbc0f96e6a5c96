#include "runtime/optimizer.h"

#include <cmath>

namespace scion::runtime {
namespace {

std::vector<ViewSpec> state_table(spec::OptimizerKind kind,
                                  const std::vector<TrainableTensor>& tensors) {
  std::vector<ViewSpec> table;
  for (const TrainableTensor& t : tensors) {
    if (kind == spec::OptimizerKind::kAdamW) {
      table.push_back({"m." + t.name, t.param.shape, DType::kF32});
      table.push_back({"v." + t.name, t.param.shape, DType::kF32});
    } else {
      table.push_back({"velocity." + t.name, t.param.shape, DType::kF32});
    }
  }
  return table;
}

}  // namespace

std::vector<TrainableTensor> trainable_tensors(const std::vector<ParameterSpec>& table,
                                               const ParameterBinding& params,
                                               const ParameterBinding& grads) {
  std::vector<TrainableTensor> out;
  for (const ParameterSpec& p : table)
    if (p.trainable) out.push_back({p.name, *params.find(p.name), *grads.find(p.name)});
  return out;
}

float global_grad_norm(Backend& backend, const std::vector<TrainableTensor>& tensors) {
  double sum = 0.0;
  for (const TrainableTensor& t : tensors) sum += backend.squared_norm(t.grad.f32(), t.grad.numel());
  return static_cast<float>(std::sqrt(sum));
}

float clip_grad_norm(Backend& backend, const std::vector<TrainableTensor>& tensors,
                     float max_norm) {
  const float norm = global_grad_norm(backend, tensors);
  if (norm > max_norm) {
    const float scale = max_norm / (norm + 1e-6f);  // torch's epsilon
    for (const TrainableTensor& t : tensors) backend.scale_inplace(t.grad.f32(), scale, t.grad.numel());
  }
  return norm;
}

Result<std::unique_ptr<Optimizer>> Optimizer::create(Backend& backend, const spec::OptimizerSpec& spec,
                                                     std::vector<TrainableTensor> tensors,
                                                     const std::string& owner) {
  auto state = Arena::create(state_table(spec.kind, tensors), backend,
                             "the optimizer state of " + owner);
  if (!state) return state.status();
  return std::unique_ptr<Optimizer>(new Optimizer(backend, spec, std::move(tensors), std::move(*state)));
}

float Optimizer::step(float lr, int micro_batches) {
  ++step_;
  if (micro_batches > 1)
    for (const TrainableTensor& t : tensors_)
      backend_.scale_inplace(t.grad.f32(), 1.0f / static_cast<float>(micro_batches), t.grad.numel());
  const float norm = spec_.grad_clip > 0 ? clip_grad_norm(backend_, tensors_, spec_.grad_clip) : 0.0f;
  for (const TrainableTensor& t : tensors_) {
    if (spec_.kind == spec::OptimizerKind::kAdamW) {
      backend_.adamw_update(t.param.f32(), t.grad.f32(), state_.view("m." + t.name).f32(),
                            state_.view("v." + t.name).f32(), t.param.numel(), lr, spec_.beta1,
                            spec_.beta2, spec_.eps, spec_.weight_decay, step_);
    } else {
      backend_.sgd_update(t.param.f32(), t.grad.f32(), state_.view("velocity." + t.name).f32(),
                          t.param.numel(), lr, spec_.momentum, spec_.weight_decay);
    }
  }
  return norm;
}

std::optional<std::string> Optimizer::first_non_finite_parameter() const {
  // A NaN or an infinity anywhere makes the sum of squares NaN or infinite, and finite
  // floats cannot overflow it (it is summed in double): one pass per tensor, on any backend.
  for (const TrainableTensor& t : tensors_)
    if (!std::isfinite(backend_.squared_norm(t.param.f32(), t.param.numel()))) return t.name;
  return std::nullopt;
}

std::vector<std::pair<std::string, Tensor>> Optimizer::checkpoint_tensors() const {
  std::vector<std::pair<std::string, Tensor>> tensors;
  for (const TrainableTensor& t : tensors_) tensors.emplace_back("param." + t.name, t.param);
  for (const std::string& name : state_.names()) tensors.emplace_back("opt." + name, state_.view(name));
  return tensors;
}

Status Optimizer::restore(int steps, const std::map<std::string, std::span<const std::byte>>& values,
                          const std::string& owner) {
  for (const auto& [name, tensor] : checkpoint_tensors()) {
    auto it = values.find(name);
    if (it == values.end() || it->second.size() != tensor.bytes())
      return corruption("checkpoint of " + owner + " lacks '" + name +
                        "' or has the wrong size; train without --resume");
    backend_.copy_to_device(tensor.data, it->second.data(), tensor.bytes());
  }
  step_ = steps;
  return Status::ok();
}

}  // namespace scion::runtime
