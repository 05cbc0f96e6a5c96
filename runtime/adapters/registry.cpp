// The registered adaptation methods (runtime/model/adaptation_method.h): a new method's
// folder adds its line here.
#include "runtime/adapters/ia3/ia3_method.h"
#include "runtime/model/adaptation_method.h"

namespace scion::runtime {

const std::vector<const AdaptationMethod*>& adaptation_methods() {
  static const Ia3Method ia3;
  static const std::vector<const AdaptationMethod*> methods = {&ia3};
  return methods;
}

}  // namespace scion::runtime
