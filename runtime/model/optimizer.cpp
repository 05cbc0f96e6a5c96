#include "runtime/model/optimizer.h"

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

Result<std::unique_ptr<Optimizer>> Optimizer::create(Backend& backend, const spec::OptimizerSpec& spec,
                                                     std::vector<TrainableTensor> tensors,
                                                     const std::string& owner) {
  auto state = Arena::create(state_table(spec.kind, tensors), backend,
                             "the optimizer state of " + owner);
  if (!state) return state.status();
  const auto doubles = static_cast<std::int64_t>(2 * tensors.size());
  auto norms = Arena::create({{"squared_norms", {2 * doubles}, DType::kF32}}, backend,
                             "the gradient norms of " + owner);
  if (!norms) return norms.status();
  return std::unique_ptr<Optimizer>(
      new Optimizer(backend, spec, std::move(tensors), std::move(*state), std::move(*norms)));
}

float Optimizer::step(float lr, int micro_batches) {
  ++step_;
  if (micro_batches > 1)
    for (const TrainableTensor& t : tensors_)
      backend_.scale_inplace(t.grad.f32(), 1.0f / static_cast<float>(micro_batches), t.grad.numel());
  const int n = static_cast<int>(tensors_.size());
  const bool clip = spec_.grad_clip > 0;
  if (clip) {
    for (int i = 0; i < n; ++i)
      backend_.squared_norm_into(squared_norms() + i, tensors_[i].grad.f32(),
                                 tensors_[i].grad.numel());
    for (const TrainableTensor& t : tensors_)
      backend_.clip_to_global_norm(t.grad.f32(), t.grad.numel(), squared_norms(), n,
                                   spec_.grad_clip);
  }
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
  read_norms();
  return clip ? global_norm(host_norms_.data(), n) : 0.0f;
}

void Optimizer::read_norms() {
  const std::size_t n = tensors_.size();
  if (n == 0) return;
  for (std::size_t i = 0; i < n; ++i)
    backend_.squared_norm_into(squared_norms() + n + i, tensors_[i].param.f32(),
                               tensors_[i].param.numel());
  backend_.copy_to_host(host_norms_.data(), squared_norms(), host_norms_.size() * sizeof(double));
  parameters_read_ = true;
}

std::optional<std::string> Optimizer::first_non_finite_parameter() {
  if (!parameters_read_) read_norms();
  // A NaN or an infinity anywhere makes the sum of squares NaN or infinite, and finite
  // floats cannot overflow it (it is summed in double).
  const std::size_t n = tensors_.size();
  for (std::size_t i = 0; i < n; ++i)
    if (!std::isfinite(host_norms_[n + i])) return tensors_[i].name;
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
  parameters_read_ = false;
  return Status::ok();
}

}  // namespace scion::runtime
