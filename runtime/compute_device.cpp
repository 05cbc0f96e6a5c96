#include "runtime/compute_device.h"

#include "runtime/cuda_plugin.h"

namespace scion::runtime {

std::optional<DeviceChoice> parse_device_choice(std::string_view text) {
  if (text == "auto") return DeviceChoice::kAuto;
  if (text == "cpu") return DeviceChoice::kCpu;
  if (text == "cuda") return DeviceChoice::kCuda;
  return std::nullopt;
}

Result<Device> resolve_device(DeviceChoice choice) {
  if (choice == DeviceChoice::kCpu) return Device::kCpu;
  const CudaBackendInfo& cuda = cuda_backend_info();
  const bool usable = cuda.loaded && !cuda.devices.empty();
  if (choice == DeviceChoice::kAuto) return usable ? Device::kCuda : Device::kCpu;
  if (!usable)
    return Status(StatusCode::kUnavailable, "--device cuda: no CUDA device to run on: " +
                                                cuda.why_no_device + "; use --device cpu");
  return Device::kCuda;
}

const char* device_name(Device device) { return device == Device::kCuda ? "cuda" : "cpu"; }

Result<std::unique_ptr<Backend>> make_backend(Device device, Precision precision) {
  if (device == Device::kCuda) return make_cuda_backend(precision);
  return make_cpu_backend(CpuBackendOptions{.precision = precision});
}

Status check_backend(const Backend& backend, const std::string& during) {
  const std::string error = backend.error();
  if (error.empty()) return Status::ok();
  return Status(StatusCode::kUnavailable, "the " + backend.name() + " backend failed during " +
                                              during + ": " + error);
}

}  // namespace scion::runtime
