// The registered adaptation methods: a new method's folder adds its line here
// (runtime/adapters/registry.h).
#include "runtime/adapters/registry.h"

#include <mutex>

#include "runtime/adapters/ia3/ia3_method.h"
#include "runtime/adapters/lora/lora_spec.h"
#include "runtime/model/adaptation_method.h"
#include "spec/adaptation_method.h"

namespace scion::runtime {

const std::vector<const AdaptationMethod*>& adaptation_methods() {
  static const Ia3Method ia3;
  // One entry per method, in the order `scion schema` and messages list them.
  static const std::vector<const AdaptationMethod*> methods = {&ia3};
  return methods;
}

void register_adaptation_methods() {
  static std::once_flag once;
  std::call_once(once, [] {
    // LoRA's spec side is a block of its own; its runtime side is not an AdaptationMethod
    // yet (runtime/model/ runs it by name), so it registers its block alone, first.
    spec::register_method_block(spec::make_lora_block());
    for (const AdaptationMethod* method : adaptation_methods())
      spec::register_method_block(method->spec_block());
  });
}

}  // namespace scion::runtime
