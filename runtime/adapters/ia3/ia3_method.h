// (IA)³ behind runtime::AdaptationMethod (runtime/model/adaptation_method.h): its parameters
// (ia3_parameters.h), its vectors bound on each linear as a LinearAdaptation at the input
// (feedforward) or output (targets) site (ia3_layer.h), its training memory and its host
// fold (ia3_fold.h). Registered in runtime/adapters/registry.cpp.
#pragma once

#include "runtime/adapters/ia3/ia3_spec.h"
#include "runtime/model/adaptation_method.h"
#include "spec/workspace.h"

namespace scion::runtime {

class Ia3Method final : public AdaptationMethod {
 public:
  std::string_view key() const override { return spec::Ia3Spec::kKey; }
  std::unique_ptr<const spec::MethodBlock> spec_block() const override {
    return spec::make_ia3_block();
  }
  void add_parameters(const spec::Model& model, const spec::Architecture& arch, int layer,
                      std::vector<ParameterSpec>& table) const override;
  std::optional<std::string> parameter_model(const std::string& name) const override;
  // Ones: a fresh model computes what its parent does (PEFT's init_ia3_weights).
  InitRule init_rule(const std::string&) const override { return InitRule::kOnes; }
  std::shared_ptr<const LinearAdaptation> bind(const spec::Model& model, int layer,
                                               const std::string& linear,
                                               const ParameterLookup& lookup) const override;
  std::int64_t training_floats(const spec::Adaptation& settings, const spec::Architecture& arch,
                               std::int64_t tokens) const override;
  void fold(const spec::Model& owner, const HostTensors& own, HostTensors& trunk) const override;
};

}  // namespace scion::runtime
