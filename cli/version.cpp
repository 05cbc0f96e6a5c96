#include "cli/version.h"

#include <iostream>
#include <nlohmann/json.hpp>

#include "cli/output.h"
#include "runtime/device_info.h"
#include "scion_config.h"

namespace scion::cli {

void print_version(bool json) {
  const nlohmann::json build = {
      {"build_type", SCION_BUILD_TYPE}, {"cuda", SCION_HAVE_CUDA == 1},
      {"cudnn", SCION_HAVE_CUDNN == 1}, {"nccl", SCION_HAVE_NCCL == 1},
      {"mpi", SCION_HAVE_MPI == 1}};
  const std::vector<std::string> devices = runtime::describe_cuda_devices();
  if (json) {
    print_json({{"version", SCION_VERSION}, {"build", build}, {"cuda_devices", devices}});
    return;
  }
  auto yes_no = [&](const char* key) { return build[key].get<bool>() ? "yes" : "no"; };
  std::cout << "scion " << SCION_VERSION << " (" << SCION_BUILD_TYPE << ")\n"
            << "build: cuda " << yes_no("cuda") << ", cudnn " << yes_no("cudnn") << ", nccl "
            << yes_no("nccl") << ", mpi " << yes_no("mpi") << "\n";
  for (const std::string& line : devices) std::cout << "device: " << line << "\n";
}

}  // namespace scion::cli
