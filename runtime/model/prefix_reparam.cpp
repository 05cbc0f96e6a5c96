#include "runtime/model/prefix_reparam.h"

#include <algorithm>
#include <vector>

#include "base/normal_sampler.h"
#include "base/seeded_rng.h"
#include "base/stable_hash.h"

namespace scion::runtime {
namespace {

std::vector<std::string> output_names(const spec::Workspace& ws, const spec::Model& model) {
  std::vector<std::string> names;
  for (const ParameterSpec& p : parameter_table(ws, model))
    if (p.name.find(".prefix." + model.name + ".") != std::string::npos) names.push_back(p.name);
  return names;  // table order: per layer, keys then values
}

std::vector<ViewSpec> mlp_table(std::int64_t P, std::int64_t C, std::int64_t H, std::int64_t out) {
  return {{"embedding", {P, C}}, {"w1", {H, C}}, {"b1", {H}}, {"w2", {out, H}}, {"b2", {out}}};
}

}  // namespace

Result<std::unique_ptr<PrefixReparametrisation>> PrefixReparametrisation::create(
    Backend& backend, const spec::Workspace& workspace, const spec::Model& model, std::uint64_t seed) {
  std::unique_ptr<PrefixReparametrisation> reparam(new PrefixReparametrisation(backend, workspace, model));
  SCION_RETURN_IF_ERROR(reparam->allocate());
  reparam->initialise(seed);
  return reparam;
}

PrefixReparametrisation::PrefixReparametrisation(Backend& backend,
                                                 const spec::Workspace& workspace,
                                                 const spec::Model& model)
    : backend_(backend), outputs_(output_names(workspace, model)),
      P_(model.adaptation.prefix->virtual_tokens), C_(workspace.architecture_of(model).width),
      hidden_(model.adaptation.prefix->reparam_hidden) {}

Status PrefixReparametrisation::allocate() {
  const std::int64_t out = static_cast<std::int64_t>(outputs_.size()) * C_;
  const std::string purpose = "a prefix reparametrisation MLP";
  auto params = Arena::create(mlp_table(P_, C_, hidden_, out), backend_, purpose);
  if (!params) return params.status();
  auto grads = Arena::create(mlp_table(P_, C_, hidden_, out), backend_, purpose);
  if (!grads) return grads.status();
  auto acts = Arena::create({{"hidden", {P_, hidden_}}, {"out", {P_, out}},
                             {"dhidden", {P_, hidden_}}, {"dembedding", {P_, C_}}},
                            backend_, purpose);
  if (!acts) return acts.status();
  params_ = std::move(*params);
  grads_ = std::move(*grads);
  acts_ = std::move(*acts);
  return Status::ok();
}

void PrefixReparametrisation::initialise(std::uint64_t seed) {
  for (const char* name : {"embedding", "w1", "w2"}) {
    const std::uint64_t stream = base::stable_hash(std::string("prefix_mlp.") + name);
    base::NormalSampler normal(base::SeededRng(seed, base::RngPurpose::kParameterInit, stream));
    const Tensor& t = params_.view(name);
    std::vector<float> values(static_cast<std::size_t>(t.numel()));
    for (float& x : values) x = static_cast<float>(0.02 * normal.next());
    backend_.copy_to_device(t.data, values.data(), t.bytes());
  }
}

void PrefixReparametrisation::materialise(const ParameterBinding& params) {
  const int out_width = static_cast<int>(outputs_.size()) * C_;
  float* hidden = acts_.view("hidden").f32();
  float* out = acts_.view("out").f32();
  backend_.matmul_forward(hidden, params_.view("embedding").f32(), params_.view("w1").f32(),
                          params_.view("b1").f32(), P_, C_, hidden_);
  backend_.tanh_forward(hidden, hidden, static_cast<std::int64_t>(P_) * hidden_);  // in place
  backend_.matmul_forward(out, hidden, params_.view("w2").f32(), params_.view("b2").f32(), P_,
                          hidden_, out_width);
  for (std::size_t j = 0; j < outputs_.size(); ++j) {
    float* dst = params.find(outputs_[j])->f32();
    for (int p = 0; p < P_; ++p)
      backend_.copy(dst + static_cast<std::size_t>(p) * C_,
                    out + static_cast<std::size_t>(p) * out_width + j * C_, C_);
  }
}

void PrefixReparametrisation::backward(const ParameterBinding& grads) {
  const int out_width = static_cast<int>(outputs_.size()) * C_;
  float* dout = acts_.view("out").f32();  // reuse: the forward output is not needed here
  for (std::size_t j = 0; j < outputs_.size(); ++j) {
    const float* src = grads.find(outputs_[j])->f32();
    for (int p = 0; p < P_; ++p)
      backend_.copy(dout + static_cast<std::size_t>(p) * out_width + j * C_,
                    src + static_cast<std::size_t>(p) * C_, C_);
  }
  const float* hidden = acts_.view("hidden").f32();
  float* dhidden = acts_.view("dhidden").f32();
  backend_.matmul_backward(dhidden, grads_.view("w2").f32(), grads_.view("b2").f32(), dout, hidden,
                           params_.view("w2").f32(), 1.0f, P_, hidden_, out_width, GradMode::kAssign);
  backend_.tanh_backward(dhidden, hidden, dhidden, static_cast<std::int64_t>(P_) * hidden_);
  float* dembedding = acts_.view("dembedding").f32();
  backend_.matmul_backward(dembedding, grads_.view("w1").f32(), grads_.view("b1").f32(), dhidden,
                           params_.view("embedding").f32(), params_.view("w1").f32(), 1.0f, P_,
                           C_, hidden_, GradMode::kAssign);
  backend_.add_inplace(grads_.view("embedding").f32(), dembedding, 1.0f,
                       static_cast<std::int64_t>(P_) * C_);
}

std::vector<TrainableTensor> PrefixReparametrisation::trainable_tensors() const {
  std::vector<TrainableTensor> out;
  for (const std::string& name : params_.names())
    out.push_back({"prefix_reparam." + name, params_.view(name), grads_.view(name)});
  return out;
}

bool PrefixReparametrisation::produces(const std::string& name) const {
  return std::find(outputs_.begin(), outputs_.end(), name) != outputs_.end();
}

}  // namespace scion::runtime
