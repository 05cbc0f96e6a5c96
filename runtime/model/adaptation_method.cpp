#include "runtime/model/adaptation_method.h"

#include <cstdio>
#include <cstdlib>

namespace scion::runtime {

std::shared_ptr<const BlockAdaptation> AdaptationMethod::bind_block(const spec::Model&,
                                                                    const spec::Architecture&, int,
                                                                    BlockSite,
                                                                    const ParameterLookup&) const {
  return nullptr;
}

void AdaptationMethod::fold(const spec::Model&, const HostTensors&, HostTensors&) const {
  std::fprintf(stderr, "scion: the %.*s adaptation cannot be folded into weights\n",
               static_cast<int>(key().size()), key().data());
  std::abort();
}

bool folds_into_weights(const AdaptationMethod& method) {
  const spec::MethodBlock* block = spec::find_method_block(method.key());
  return block == nullptr || block->unfoldable_adapter().empty();
}

const AdaptationMethod* method_of_parameter(const std::string& name) {
  for (const AdaptationMethod* method : adaptation_methods())
    if (method->parameter_model(name)) return method;
  return nullptr;
}

}  // namespace scion::runtime
