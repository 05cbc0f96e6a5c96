// The registered adaptation methods: a new method's folder adds its line here
// (runtime/adapters/registry.h).
#include "runtime/adapters/registry.h"

#include <mutex>

#include "runtime/adapters/bottleneck/bottleneck_method.h"
#include "runtime/adapters/ia3/ia3_method.h"
#include "runtime/adapters/lora/lora_method.h"
#include "runtime/model/adaptation_method.h"
#include "spec/adaptation_method.h"

namespace scion::runtime {

const std::vector<const AdaptationMethod*>& adaptation_methods() {
  static const LoraMethod lora;
  static const Ia3Method ia3;
  static const BottleneckMethod bottleneck;
  // One entry per method, in the order `scion schema` and messages list them, the passes
  // run a linear's adaptations at one site and the merges fold them.
  static const std::vector<const AdaptationMethod*> methods = {&lora, &ia3, &bottleneck};
  return methods;
}

void register_adaptation_methods() {
  static std::once_flag once;
  std::call_once(once, [] {
    for (const AdaptationMethod* method : adaptation_methods())
      spec::register_method_block(method->spec_block());
  });
}

}  // namespace scion::runtime
