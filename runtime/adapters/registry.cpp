#include "runtime/adapters/registry.h"

#include <mutex>

#include "runtime/adapters/ia3/ia3_spec.h"
#include "spec/adaptation_method.h"

namespace scion::runtime {

void register_adaptation_methods() {
  static std::once_flag once;
  std::call_once(once, [] {
    // One line per method, in the order `scion schema` and messages list them.
    spec::register_method_block(spec::make_ia3_block());
  });
}

}  // namespace scion::runtime
