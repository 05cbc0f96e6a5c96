// LoRA (with its options rsLoRA and DoRA) behind runtime::AdaptationMethod
// (runtime/model/adaptation_method.h): its spec block (lora_spec.h), its parameters
// (lora_parameters.h), its matrices bound on each linear as a LinearAdaptation at the
// kBeside site (lora_layer.h, dora_layer.h), its training memory and its host fold
// (lora_fold.h). Registered first in runtime/adapters/registry.cpp.
#pragma once

#include "runtime/adapters/lora/lora_spec.h"
#include "runtime/model/adaptation_method.h"
#include "spec/workspace.h"

namespace scion::runtime {

class LoraMethod final : public AdaptationMethod {
 public:
  std::string_view key() const override { return spec::LoraSpec::kKey; }
  std::unique_ptr<const spec::MethodBlock> spec_block() const override {
    return spec::make_lora_block();
  }
  void add_parameters(const spec::Model& model, const spec::Architecture& arch, int layer,
                      std::vector<ParameterSpec>& table) const override;
  std::optional<std::string> parameter_model(const std::string& name) const override;
  // A Kaiming-uniform, B zeros (a fresh model computes what its parent does), DoRA's m the
  // weight's row norms.
  InitRule init_rule(const std::string& name) const override;
  std::shared_ptr<const LinearAdaptation> bind(const spec::Model& model, int layer,
                                               const std::string& linear,
                                               const ParameterLookup& lookup) const override;
  std::int64_t training_floats(const spec::Adaptation& settings, const spec::Architecture& arch,
                               std::int64_t tokens) const override;
  // W + s·B·A (DoRA: each row then scaled to its magnitude) on every linear `owner` adapts.
  void fold(const spec::Model& owner, const HostTensors& own, HostTensors& trunk) const override;
};

}  // namespace scion::runtime
