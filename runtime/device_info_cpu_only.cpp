// Built instead of cuda/device_query.cu when scion is configured without CUDA.
#include "runtime/device_info.h"

namespace scion::runtime {

std::vector<std::string> describe_cuda_devices() {
  return {"CUDA support not built (install the CUDA toolkit and reconfigure with -Dcuda=enabled)"};
}

}  // namespace scion::runtime
