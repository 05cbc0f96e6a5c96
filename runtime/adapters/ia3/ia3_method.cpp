#include "runtime/adapters/ia3/ia3_method.h"

#include "runtime/adapters/ia3/ia3_fold.h"
#include "runtime/adapters/ia3/ia3_layer.h"
#include "runtime/adapters/ia3/ia3_parameters.h"

namespace scion::runtime {
namespace {

// One vector on one linear: scaling its input rows or its output rows.
class Ia3Adaptation final : public LinearAdaptation {
 public:
  explicit Ia3Adaptation(Ia3Weights weights) : w_(weights) {}

  LinearSite site() const override {
    return w_.on_input ? LinearSite::kInput : LinearSite::kOutput;
  }

  bool trained() const override { return w_.dscale != nullptr; }

  std::string refusal(const std::string&, bool) const override { return {}; }

  // An output vector keeps the unscaled output for its backward; an input vector reads the
  // linear's input, which the pass hands it.
  std::vector<std::int64_t> activation_sizes(const LinearShape& shape) const override {
    if (w_.on_input || !shape.backward) return {};
    return {shape.rows * shape.out};
  }
  std::vector<std::int64_t> scratch_sizes(const LinearShape&) const override { return {}; }

  double forward_flops(std::int64_t rows, int in, int out) const override {
    return static_cast<double>(rows) * (w_.on_input ? in : out);  // one product an element
  }

  void forward(Backend& be, const LinearRows& r) const override {
    if (w_.on_input)
      ia3_input_forward(be, r.rows, r.rows, w_, r.n, r.in);
    else
      ia3_output_forward(be, r.rows, r.activations.empty() ? nullptr : r.activations[0], w_, r.n,
                         r.out);
  }

  void backward(Backend& be, const LinearRows& r, float* din, const float* dout) const override {
    if (w_.on_input)
      ia3_input_backward(be, din, dout, r.input, w_, r.n, r.in);
    else
      ia3_output_backward(be, din, dout, r.activations[0], w_, r.n, r.out);
  }

  bool same_as(const LinearAdaptation& other) const override {
    const auto* o = dynamic_cast<const Ia3Adaptation*>(&other);
    return o && o->w_.scale == w_.scale && o->w_.on_input == w_.on_input;
  }

 private:
  Ia3Weights w_;
};

}  // namespace

void Ia3Method::add_parameters(const spec::Model& model, const spec::Architecture& arch, int layer,
                               std::vector<ParameterSpec>& table) const {
  if (const spec::Ia3Spec* ia3 = model.adaptation.find<spec::Ia3Spec>())
    add_ia3_parameters(*ia3, model.name, arch, layer, table);
}

std::optional<std::string> Ia3Method::parameter_model(const std::string& name) const {
  if (!is_ia3_parameter(name)) return std::nullopt;
  const std::size_t from = name.find(kIa3Marker) + std::string_view(kIa3Marker).size();
  const std::size_t end = name.rfind('.');  // before "in" or "out"
  if (end < from) return std::nullopt;
  return name.substr(from, end - from);
}

std::shared_ptr<const LinearAdaptation> Ia3Method::bind(const spec::Model& model, int layer,
                                                        const std::string& linear,
                                                        const ParameterLookup& lookup) const {
  std::shared_ptr<const LinearAdaptation> bound;
  for (const bool on_input : {false, true})
    if (const auto p = lookup(ia3_parameter_name(layer, linear, model.name, on_input)))
      bound = std::make_shared<Ia3Adaptation>(Ia3Weights{p->value, p->grad, on_input});
  return bound;
}

std::int64_t Ia3Method::training_floats(const spec::Adaptation& settings,
                                        const spec::Architecture& arch, std::int64_t tokens) const {
  const spec::Ia3Spec* ia3 = settings.find<spec::Ia3Spec>();
  return ia3 ? tokens * ia3_training_floats_per_token(*ia3, arch) : 0;
}

// Each vector into its linear's weight, and an output vector into its bias too.
void Ia3Method::fold(const spec::Model&, const HostTensors& own, HostTensors& trunk) const {
  for (const auto& [name, scale] : own) {
    const std::string stem = name.substr(0, name.find(kIa3Marker));
    const bool on_input = name.ends_with(".in");
    std::vector<float>& w = trunk.at(stem + ".weight");
    const auto bias = trunk.find(stem + ".bias");
    const auto n = static_cast<std::int64_t>(scale.size());
    const auto rest = static_cast<std::int64_t>(w.size()) / n;
    fold_ia3(w.data(), bias == trunk.end() ? nullptr : bias->second.data(), scale.data(), on_input,
             on_input ? rest : n, on_input ? n : rest);
  }
}

}  // namespace scion::runtime
