// The bottleneck adapter behind runtime::AdaptationMethod (runtime/model/adaptation_method.h):
// its parameters (bottleneck_parameters.h), each adapter bound on a block's residual stream
// as a BlockAdaptation at kAfterAttention or kAfterFfn (bottleneck_layer.h), and its
// training memory. It binds on no linear, and it has no fold: it is not a change of the
// trunk's weights (its spec block says so: spec::MethodBlock::unfoldable_adapter), so the
// merges never call it. Registered in runtime/adapters/registry.cpp.
#pragma once

#include "runtime/adapters/bottleneck/bottleneck_spec.h"
#include "runtime/model/adaptation_method.h"
#include "spec/workspace.h"

namespace scion::runtime {

class BottleneckMethod final : public AdaptationMethod {
 public:
  std::string_view key() const override { return spec::BottleneckSpec::kKey; }
  std::unique_ptr<const spec::MethodBlock> spec_block() const override {
    return spec::make_bottleneck_block();
  }
  void add_parameters(const spec::Model& model, const spec::Architecture& arch, int layer,
                      std::vector<ParameterSpec>& table) const override;
  std::optional<std::string> parameter_model(const std::string& name) const override;
  // up (weight and bias) and down's bias at zero: a fresh adapter adds nothing.
  InitRule init_rule(const std::string& name) const override;
  // None: the adapter acts on the residual stream, not on a linear.
  std::shared_ptr<const LinearAdaptation> bind(const spec::Model&, int, const std::string&,
                                               const ParameterLookup&) const override {
    return nullptr;
  }
  std::shared_ptr<const BlockAdaptation> bind_block(const spec::Model& model,
                                                    const spec::Architecture& arch, int layer,
                                                    BlockSite site,
                                                    const ParameterLookup& lookup) const override;
  std::int64_t training_floats(const spec::Adaptation& settings, const spec::Architecture& arch,
                               std::int64_t tokens) const override;
};

}  // namespace scion::runtime
