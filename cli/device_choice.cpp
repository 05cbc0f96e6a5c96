#include "cli/device_choice.h"

#include "runtime/cuda_plugin.h"

namespace scion::cli {

Status check_device_choice(const std::string& device) {
  if (device != "cuda") return Status::ok();
  const runtime::CudaBackendInfo& cuda = runtime::cuda_backend_info();
  if (!cuda.devices.empty())
    return Status(StatusCode::kUnavailable,
                  "--device cuda: " + cuda.devices.front() +
                      " is visible, but the CUDA backend implements no training or evaluation "
                      "ops yet (docs/gpu.md); use --device cpu");
  return Status(StatusCode::kUnavailable,
                "--device cuda: no CUDA device to run on: " + cuda.why_no_device + "; use --device cpu");
}

}  // namespace scion::cli
