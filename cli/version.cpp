#include "cli/version.h"

#include <iostream>
#include <nlohmann/json.hpp>

#include "cli/output.h"
#include "runtime/cpu/onednn_gemm.h"
#include "runtime/device_info.h"
#include "scion_config.h"

namespace scion::cli {

void print_version(bool json) {
  const nlohmann::json build = {
      {"build_type", SCION_BUILD_TYPE}, {"cuda", SCION_HAVE_CUDA == 1},
      {"cudnn", SCION_HAVE_CUDNN == 1}, {"nccl", SCION_HAVE_NCCL == 1},
      {"mpi", SCION_HAVE_MPI == 1}};
  const std::vector<std::string> devices = runtime::describe_cuda_devices();
  const runtime::cpu::OnednnInfo onednn = runtime::cpu::onednn_info();
  const nlohmann::json cpu = {{"onednn", onednn.version},
                              {"isa", onednn.isa},
                              {"native_bf16", onednn.native_bf16},
                              {"bf16_kernel", onednn.bf16_kernel}};
  if (json) {
    print_json({{"version", SCION_VERSION}, {"build", build}, {"cpu", cpu}, {"cuda_devices", devices}});
    return;
  }
  auto yes_no = [&](const char* key) { return build[key].get<bool>() ? "yes" : "no"; };
  std::cout << "scion " << SCION_VERSION << " (" << SCION_BUILD_TYPE << ")\n"
            << "build: cuda " << yes_no("cuda") << ", cudnn " << yes_no("cudnn") << ", nccl "
            << yes_no("nccl") << ", mpi " << yes_no("mpi") << "\n";
  std::cout << "cpu: oneDNN " << onednn.version << ", isa " << onednn.isa << ", bf16 "
            << (onednn.native_bf16 ? "native"
                : onednn.bf16_kernel ? "emulated by oneDNN (no bf16 instructions)"
                                     : "emulated in fp32 (no bf16 instructions; fp32 is faster here)")
            << "\n";
  for (const std::string& line : devices) std::cout << "device: " << line << "\n";
}

}  // namespace scion::cli
