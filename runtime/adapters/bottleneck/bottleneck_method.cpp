#include "runtime/adapters/bottleneck/bottleneck_method.h"

#include "runtime/adapters/bottleneck/bottleneck_layer.h"
#include "runtime/adapters/bottleneck/bottleneck_parameters.h"

namespace scion::runtime {
namespace {

// One adapter at one site of one model's block.
class BottleneckAdaptation final : public BlockAdaptation {
 public:
  BottleneckAdaptation(BottleneckWeights weights, BlockSite site) : w_(weights), site_(site) {}

  BlockSite site() const override { return site_; }

  bool trained() const override { return w_.down.dweight != nullptr; }

  // The pre- and post-GELU rows (rows, H), kept for the backward.
  std::vector<std::int64_t> activation_sizes(const BlockShape& shape) const override {
    return {shape.rows * hidden(), shape.rows * hidden()};
  }
  // The backward's gradients of those rows.
  std::vector<std::int64_t> scratch_sizes(const BlockShape& shape) const override {
    if (!shape.backward) return {};
    return {shape.rows * hidden(), shape.rows * hidden()};
  }

  double forward_flops(std::int64_t rows, int width) const override {
    return 4.0 * static_cast<double>(rows) * width * hidden();  // down and up
  }

  void forward(Backend& be, const BlockRows& r) const override {
    bottleneck_forward(be, w_, {r.activations[0], r.activations[1]}, r.output, r.delta, r.residual,
                       r.n, r.width);
  }

  void backward(Backend& be, const BlockRows& r, const float* dres, float* dy) const override {
    bottleneck_backward(be, w_, {r.activations[0], r.activations[1]}, r.output, dres, dy,
                        r.scratch[0], r.scratch[1], r.n, r.width);
  }

  bool same_as(const BlockAdaptation& other) const override {
    const auto* o = dynamic_cast<const BottleneckAdaptation*>(&other);
    return o && o->site_ == site_ && o->w_.down.weight == w_.down.weight &&
           o->w_.down.bias == w_.down.bias && o->w_.up.weight == w_.up.weight &&
           o->w_.up.bias == w_.up.bias;
  }

 private:
  std::int64_t hidden() const { return w_.down.out; }

  BottleneckWeights w_;
  BlockSite site_;
};

}  // namespace

void BottleneckMethod::add_parameters(const spec::Model& model, const spec::Architecture& arch,
                                      int layer, std::vector<ParameterSpec>& table) const {
  if (const auto* settings = model.adaptation.find<spec::BottleneckSpec>())
    add_bottleneck_parameters(*settings, model.name, arch, layer, table);
}

std::optional<std::string> BottleneckMethod::parameter_model(const std::string& name) const {
  return bottleneck_parameter_model(name);
}

InitRule BottleneckMethod::init_rule(const std::string& name) const {
  return name.ends_with(".down.weight") ? InitRule::kNormal : InitRule::kZeros;
}

std::shared_ptr<const BlockAdaptation> BottleneckMethod::bind_block(
    const spec::Model& model, const spec::Architecture& arch, int layer, BlockSite site,
    const ParameterLookup& lookup) const {
  const auto* settings = model.adaptation.find<spec::BottleneckSpec>();
  if (!settings) return nullptr;
  const std::string stem = bottleneck_stem(layer, site, model.name);
  const auto down_w = lookup(stem + "down.weight"), down_b = lookup(stem + "down.bias");
  const auto up_w = lookup(stem + "up.weight"), up_b = lookup(stem + "up.bias");
  if (!down_w || !down_b || !up_w || !up_b) return nullptr;
  const int C = arch.width, H = bottleneck_hidden(*settings, arch.width);
  const LinearWeights down{down_w->value, down_b->value, down_w->grad, down_b->grad, C, H};
  const LinearWeights up{up_w->value, up_b->value, up_w->grad, up_b->grad, H, C};
  return std::make_shared<BottleneckAdaptation>(BottleneckWeights{down, up}, site);
}

std::int64_t BottleneckMethod::training_floats(const spec::Adaptation& settings,
                                               const spec::Architecture& arch,
                                               std::int64_t tokens) const {
  const auto* bottleneck = settings.find<spec::BottleneckSpec>();
  return bottleneck ? tokens * bottleneck_training_floats_per_token(*bottleneck, arch) : 0;
}

}  // namespace scion::runtime
