#include "runtime/adapters/lora/lora_method.h"

#include <algorithm>
#include <iterator>

#include "base/seeded_rng.h"
#include "runtime/adapters/lora/lora_fold.h"
#include "runtime/adapters/lora/lora_layer.h"
#include "runtime/adapters/lora/lora_parameters.h"
#include "runtime/model/model_weights.h"

namespace scion::runtime {
namespace {

// The order of the buffers LoraAdaptation asks the batch plan for (activation_sizes,
// scratch_sizes): LinearRows hands them back so.
enum ActivationSlot { kHidden, kDropped, kMask, kCombined, kNorms, kActivationSlots };
enum ScratchSlot { kDhidden, kDinput, kDoraWeight, kDcombined, kScratchSlots };

// One LoRA (or DoRA) on one linear, beside its frozen product.
class LoraAdaptation final : public LinearAdaptation {
 public:
  explicit LoraAdaptation(LoraWeights weights) : w_(weights) {}

  LinearSite site() const override { return LinearSite::kBeside; }

  bool trained() const override { return w_.da || w_.db || w_.dmagnitude; }

  // DoRA's weight norm is taken of the fp32 weight (dora_layer.h); a trunk held in bf16 (a
  // bf16 group, or --precision bf16) has none.
  std::string refusal(const std::string& linear, bool weight_in_fp32) const override {
    if (!w_.magnitude || weight_in_fp32) return {};
    return "DoRA on " + linear +
           " needs that weight in fp32, and it is held in bf16; DoRA runs in fp32 only (leave "
           "out precision: bf16)";
  }

  std::vector<std::int64_t> activation_sizes(const LinearShape& s) const override {
    std::vector<std::int64_t> sizes(kActivationSlots, 0);
    sizes[kHidden] = s.rows * w_.rank;
    if (dropped(s)) sizes[kDropped] = sizes[kMask] = s.rows * s.in;
    if (w_.magnitude) {
      sizes[kCombined] = s.rows * s.out;
      sizes[kNorms] = s.out;
    }
    return sizes;
  }

  std::vector<std::int64_t> scratch_sizes(const LinearShape& s) const override {
    std::vector<std::int64_t> sizes(kScratchSlots, 0);
    if (s.backward) sizes[kDhidden] = s.rows * w_.rank;
    if (dropped(s)) sizes[kDinput] = s.rows * s.in;
    if (w_.magnitude) sizes[kDoraWeight] = static_cast<std::int64_t>(s.out) * s.in;
    if (w_.magnitude && s.backward) sizes[kDcombined] = s.rows * s.out;
    return sizes;
  }

  double forward_flops(std::int64_t rows, int in, int out) const override {
    const double r = static_cast<double>(rows);
    const double lora = 2.0 * r * w_.rank * (in + out);
    // DoRA: W·x̃ again, and W + s·B·A for its norms (dora_layer.h).
    if (!w_.magnitude) return lora;
    return lora + (2.0 * r * in * out + 2.0 * out * in * w_.rank);
  }

  void forward(Backend& be, const LinearRows& r) const override {
    const LoraDropout dropout{r.dropout_seed, w_.stream + static_cast<std::uint64_t>(r.position),
                              r.first_element};
    lora_forward(be, r.rows, activations(r), scratch(r), r.input, r.weight, w_, dropout, r.n, r.in,
                 r.out);
  }

  void backward(Backend& be, const LinearRows& r, float* din, const float* dout) const override {
    lora_backward(be, din, activations(r), scratch(r), dout, r.input, r.weight, w_, r.n, r.in,
                  r.out);
  }

  bool same_as(const LinearAdaptation& other) const override {
    const auto* o = dynamic_cast<const LoraAdaptation*>(&other);
    return o && o->w_.a == w_.a && o->w_.b == w_.b && o->w_.scale == w_.scale &&
           o->w_.magnitude == w_.magnitude;
  }

 private:
  // Dropout applies only while the adapter trains (its rate is 0 otherwise: bind).
  bool dropped(const LinearShape& s) const { return s.training && w_.dropout > 0; }

  static LoraActivations activations(const LinearRows& r) {
    return {r.activations[kHidden], r.activations[kDropped], r.activations[kMask],
            r.activations[kCombined], r.activations[kNorms]};
  }
  static LoraScratch scratch(const LinearRows& r) {
    auto at = [&r](int slot) { return slot < std::ssize(r.scratch) ? r.scratch[slot] : nullptr; };
    return {at(kDhidden), at(kDinput), at(kDoraWeight), at(kDcombined)};
  }

  LoraWeights w_;
};

}  // namespace

void LoraMethod::add_parameters(const spec::Model& model, const spec::Architecture& arch, int layer,
                                std::vector<ParameterSpec>& table) const {
  if (const spec::LoraSpec* lora = model.adaptation.find<spec::LoraSpec>())
    add_lora_parameters(*lora, model.name, arch, layer, table);
}

std::optional<std::string> LoraMethod::parameter_model(const std::string& name) const {
  return lora_parameter_model(name);
}

InitRule LoraMethod::init_rule(const std::string& name) const {
  if (name.ends_with(".a")) return InitRule::kKaimingUniform;
  if (name.ends_with(".m")) return InitRule::kWeightRowNorms;
  return InitRule::kZeros;
}

std::shared_ptr<const LinearAdaptation> LoraMethod::bind(const spec::Model& model, int layer,
                                                         const std::string& linear,
                                                         const ParameterLookup& lookup) const {
  const spec::LoraSpec* settings = model.adaptation.find<spec::LoraSpec>();
  if (!settings) return nullptr;
  const auto a = lookup(lora_parameter_name(layer, linear, model.name, 'a'));
  const auto b = lookup(lora_parameter_name(layer, linear, model.name, 'b'));
  if (!a || !b) return nullptr;
  const auto i = std::distance(std::begin(kLinearStems),
                               std::find(std::begin(kLinearStems), std::end(kLinearStems), linear));
  LoraWeights w{a->value,
                b->value,
                a->grad,
                b->grad,
                settings->rank,
                settings->scaling(),
                a->grad ? settings->dropout : 0.0f,
                base::splitmix64(0x10A4u + 31u * static_cast<std::uint64_t>(layer) +
                                 static_cast<std::uint64_t>(i))};
  if (const auto m = lookup(lora_parameter_name(layer, linear, model.name, 'm'))) {
    w.magnitude = m->value;
    w.dmagnitude = m->grad;
  }
  return std::make_shared<LoraAdaptation>(w);
}

std::int64_t LoraMethod::training_floats(const spec::Adaptation& settings,
                                         const spec::Architecture& arch,
                                         std::int64_t tokens) const {
  const spec::LoraSpec* lora = settings.find<spec::LoraSpec>();
  return lora ? lora_training_floats(*lora, arch, tokens) : 0;
}

void LoraMethod::fold(const spec::Model& owner, const HostTensors& own, HostTensors& trunk) const {
  const spec::LoraSpec& lora = *owner.adaptation.find<spec::LoraSpec>();
  for (const auto& [name, a] : own) {
    if (!name.ends_with(".a")) continue;
    const std::string stem = name.substr(0, name.size() - 1);  // "blk.N.<linear>.lora.<model>."
    const std::vector<float>& b = own.at(stem + "b");
    const float* magnitude = lora.use_dora ? own.at(stem + "m").data() : nullptr;
    std::vector<float>& w = trunk.at(name.substr(0, name.find(kLoraMarker)) + ".weight");
    const std::int64_t R = lora.rank;
    const auto I = static_cast<std::int64_t>(a.size()) / R;
    const auto O = static_cast<std::int64_t>(b.size()) / R;
    fold_lora(w.data(), a.data(), b.data(), magnitude, lora.scaling(), O, I, R);
  }
}

}  // namespace scion::runtime
