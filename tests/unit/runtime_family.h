// A tiny in-memory family for runtime tests: a base architecture, descendants added by
// each test, one ParameterStore shared by all, and per-model gradients and weights.
#pragma once

#include <cstring>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "runtime/adapters/ia3/ia3_spec.h"
#include "runtime/backend.h"
#include "runtime/model/family_batch.h"
#include "runtime/model/model_weights.h"
#include "runtime/model/parameter_binding.h"

namespace scion::test {

inline spec::Architecture tiny_architecture(spec::ArchitectureKind kind = spec::ArchitectureKind::kEncoder,
                                            spec::NormPlacement norm = spec::NormPlacement::kPre) {
  spec::Architecture a;
  a.kind = kind;
  a.layers = 2;
  a.width = 8;
  a.heads = 2;
  a.ffn_width = 16;
  a.vocab_size = 16;
  a.max_length = 12;
  a.norm = norm;
  return a;
}

// The Llama shape on the tiny sizes, as a Hugging Face Llama imports: RMSNorm, rotary
// positions, the SwiGLU FFN (its gate a linear of its own), one key/value head for the two
// query heads, no biases, untied embeddings.
inline spec::Architecture tiny_llama_architecture() {
  spec::Architecture a = tiny_architecture(spec::ArchitectureKind::kDecoder);
  a.norm_kind = spec::NormKind::kRmsNorm;
  a.positions = spec::PositionKind::kRotary;
  a.activation = spec::Activation::kSwiGlu;
  a.kv_heads = 1;
  a.linear_bias = false;
  a.tie_embeddings = false;
  a.hf_model_type = "llama";
  return a;
}

// An adaptation with (IA)³ vectors on the outputs of `targets` and the inputs of
// `feedforward` (kLinearTargets names), in every layer.
inline spec::Adaptation ia3_adaptation(std::vector<std::string> targets,
                                       std::vector<std::string> feedforward) {
  spec::Adaptation ad;
  spec::Ia3Spec settings;
  settings.targets = std::move(targets);
  settings.feedforward = std::move(feedforward);
  ad.set(std::move(settings));
  return ad;
}

class Family {
 public:
  explicit Family(spec::Architecture arch, int threads = 0)
      : Family(std::move(arch), runtime::make_cpu_backend(threads)) {}
  // On another backend; randomise() then needs one whose memory the host may write.
  Family(spec::Architecture arch, std::unique_ptr<runtime::Backend> backend)
      : backend_(std::move(backend)) {
    spec::Model base;
    base.name = "base";
    base.architecture = arch;
    ws_.models.push_back(base);
    ws_.models.reserve(32);  // models are referenced by pointer below
  }

  spec::Model& add(const std::string& name, const std::string& from, spec::Adaptation adaptation) {
    spec::Model m;
    m.name = name;
    m.from = from;
    m.adaptation = std::move(adaptation);
    ws_.models.push_back(m);
    return ws_.models.back();
  }

  const spec::Workspace& workspace() const { return ws_; }
  runtime::Backend& backend() { return *backend_; }
  const spec::Model& model(const std::string& name) const { return *ws_.find_model(name); }

  // Allocates and initialises every model's parameters (in order, parents first).
  void materialise(std::uint64_t seed = 1) {
    store_ = std::make_unique<runtime::ParameterStore>(*backend_);
    for (const spec::Model& m : ws_.models) {
      params_[m.name] = store_->add_model(ws_, m).value();
      runtime::initialize_new_parameters(*backend_, ws_, m, params_[m.name], seed);
      grads_[m.name] = std::make_unique<runtime::GradientSet>(
          runtime::GradientSet::create(runtime::parameter_table(ws_, m), *backend_, m.name).value());
    }
  }

  // Gives every parameter random values (LoRA B and bottleneck up too), so gradient checks
  // see nonzero paths everywhere.
  void randomise(std::uint64_t seed) {
    std::mt19937_64 rng(seed);
    std::normal_distribution<float> normal(0.0f, 0.4f);
    for (auto& [name, view] : all_parameters()) {
      float* x = view.f32();
      const bool norm_weight = name.ends_with("ln1.weight") || name.ends_with("ln2.weight") ||
                               name == "ln_f.weight" || name == "emb_ln.weight";
      for (std::int64_t i = 0; i < view.numel(); ++i) x[i] = (norm_weight ? 1.0f : 0.0f) + normal(rng);
    }
  }

  std::map<std::string, runtime::Tensor> all_parameters() const {
    std::map<std::string, runtime::Tensor> out;
    for (const auto& [model, binding] : params_)
      for (const auto& [name, view] : binding.views()) out[model + "/" + name] = view;
    std::map<std::string, runtime::Tensor> unique;  // one entry per storage
    std::map<void*, bool> seen;
    for (const auto& [key, view] : out)
      if (!seen[view.data]) {
        seen[view.data] = true;
        unique[key.substr(key.find('/') + 1)] = view;
      }
    return unique;
  }

  const runtime::ParameterBinding& params(const std::string& model) const { return params_.at(model); }

  // Copies of `model`'s parameters in storage of their own, bound under the same names:
  // what the merge tests fold an adapter into without touching the family.
  struct ParameterCopies {
    runtime::Arena storage;
    runtime::ParameterBinding binding;
  };
  ParameterCopies copy_parameters(const std::string& model) {
    const auto table = runtime::parameter_table(ws_, *ws_.find_model(model));
    std::vector<runtime::ViewSpec> views;
    for (const runtime::ParameterSpec& p : table)
      views.push_back({p.name, p.shape, runtime::DType::kF32});
    ParameterCopies copies{runtime::Arena::create(views, *backend_, "merged copies").value(), {}};
    for (const runtime::ParameterSpec& p : table) {
      const runtime::Tensor& src = *params_.at(model).find(p.name);
      std::memcpy(copies.storage.view(p.name).data, src.data, src.bytes());
      copies.binding.bind(p.name, copies.storage.view(p.name));
    }
    return copies;
  }
  runtime::GradientSet& grads(const std::string& model) { return *grads_.at(model); }

  runtime::ModelWeights weights(const std::string& model,
                                spec::Objective objective = spec::Objective::kClassification) {
    auto w = runtime::resolve_model(ws_, *ws_.find_model(model), objective, params_.at(model),
                                    &grads_.at(model)->binding());
    REQUIRE(w.is_ok());
    return std::move(w).value();
  }

 private:
  spec::Workspace ws_;
  std::unique_ptr<runtime::Backend> backend_;
  std::unique_ptr<runtime::ParameterStore> store_;
  std::map<std::string, runtime::ParameterBinding> params_;
  std::map<std::string, std::unique_ptr<runtime::GradientSet>> grads_;
};

// Token ids, lengths and labels for B sequences of T tokens (the second one padded).
struct TinyBatch {
  std::vector<std::int32_t> tokens, lengths, labels, lm_targets;
  TinyBatch(int B, int T, int V, int classes, std::uint64_t seed) {
    std::mt19937_64 rng(seed);
    for (int i = 0; i < B * T; ++i) tokens.push_back(static_cast<std::int32_t>(rng() % V));
    for (int b = 0; b < B; ++b) lengths.push_back(b % 2 ? T - 2 : T);
    for (int b = 0; b < B; ++b) labels.push_back(static_cast<std::int32_t>(rng() % classes));
    for (int b = 0; b < B; ++b)
      for (int t = 0; t < T; ++t)
        lm_targets.push_back(t < lengths[b] ? static_cast<std::int32_t>(rng() % V) : -100);
  }
  runtime::Segment segment(const runtime::ModelWeights* model, int B, int T, std::uint64_t seed,
                           bool lm = false) const {
    return {model, B, T, tokens.data(), lengths.data(), lm ? lm_targets.data() : labels.data(), seed};
  }
};

inline spec::HeadSpec two_labels(spec::Pooling pooling = spec::Pooling::kCls) {
  spec::HeadSpec h;
  h.labels = {"neg", "pos"};
  h.pooling = pooling;
  return h;
}

}  // namespace scion::test
