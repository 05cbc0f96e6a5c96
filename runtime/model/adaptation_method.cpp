#include "runtime/model/adaptation_method.h"

namespace scion::runtime {

const AdaptationMethod* method_of_parameter(const std::string& name) {
  for (const AdaptationMethod* method : adaptation_methods())
    if (method->parameter_model(name)) return method;
  return nullptr;
}

}  // namespace scion::runtime
