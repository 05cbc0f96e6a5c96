#include "cli/device_choice.h"

#include "runtime/compute_device.h"
#include "runtime/cuda_plugin.h"

namespace scion::cli {

Result<runtime::Device> choose_device(const std::string& device) {
  const auto choice = runtime::parse_device_choice(device);
  // CLI11 admits only the three names; anything else is a bug in the caller.
  if (!choice) return Status(StatusCode::kInvalidArgument, "--device: '" + device + "' is not cpu, cuda or auto");
  return runtime::resolve_device(*choice);
}

std::string describe_device_choice(const std::string& device) {
  const auto chosen = choose_device(device);
  if (!chosen) return "none (" + chosen.status().message() + ")";
  const runtime::CudaBackendInfo& cuda = runtime::cuda_backend_info();
  if (*chosen == runtime::Device::kCuda)
    return "cuda (--device " + device + ": " + cuda.devices.front() + ")";
  if (device == "cpu") return "cpu (--device cpu)";
  return "cpu (--device auto: " + (cuda.why_no_device.empty() ? std::string("no CUDA device") : cuda.why_no_device) + ")";
}

}  // namespace scion::cli
