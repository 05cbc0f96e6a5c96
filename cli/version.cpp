#include "cli/version.h"

#include <iostream>
#include <nlohmann/json.hpp>

#include "cli/device_choice.h"
#include "cli/output.h"
#include "runtime/cpu/matmul_choice.h"
#include "runtime/cpu/onednn_gemm.h"
#include "runtime/cuda_plugin.h"
#include "scion_config.h"

namespace scion::cli {

void print_version(bool json, const std::string& device) {
  // What was built (nccl: linked into the CUDA plugin), then what this process
  // could actually load and see: a plugin built but not loadable is said as such.
  const nlohmann::json build = {{"build_type", SCION_BUILD_TYPE},
                                {"cuda_plugin", SCION_HAVE_CUDA == 1},
                                {"nccl", SCION_HAVE_NCCL == 1},
                                {"mpi", SCION_HAVE_MPI == 1},
                                {"sanitize", SCION_SANITIZE}};
  const runtime::cpu::OnednnInfo onednn = runtime::cpu::onednn_info();
  const runtime::cpu::MatmulChoice& choice = runtime::cpu::fp32_matmul_choice();
  nlohmann::json classes = nlohmann::json::object();
  for (int c = 0; c < runtime::cpu::kProductClasses; ++c) {
    const runtime::cpu::ClassChoice& chosen = choice.classes[c];
    nlohmann::json entry = {{"library", runtime::cpu::matmul_library_name(chosen.library)}};
    if (chosen.onednn_gflops > 0) {
      entry["onednn_gflops"] = chosen.onednn_gflops;
      entry["openblas_gflops"] = chosen.openblas_gflops;
    }
    classes[runtime::cpu::product_class_name(static_cast<runtime::cpu::ProductClass>(c))] = entry;
  }
  nlohmann::json fp32_matmul = {{"how", choice.how}, {"classes", classes}};
  if (!choice.cache_path.empty()) fp32_matmul["cache"] = choice.cache_path;
  const nlohmann::json cpu = {{"onednn", onednn.version},
                              {"isa", onednn.isa},
                              {"native_bf16", onednn.native_bf16},
                              {"bf16_kernel", onednn.bf16_kernel},
                              {"openblas_core", choice.openblas_core},
                              {"openblas_config", choice.openblas_config},
                              {"fp32_matmul", fp32_matmul}};
  const runtime::CudaBackendInfo& cuda = runtime::cuda_backend_info();
  if (json) {
    nlohmann::json backend = {{"built", cuda.built}, {"loaded", cuda.loaded}, {"devices", cuda.devices}};
    if (!cuda.plugin_path.empty()) backend["plugin"] = cuda.plugin_path;
    if (cuda.built) backend["plugin_search"] = cuda.plugin_candidates;
    if (!cuda.libraries.empty()) backend["libraries"] = cuda.libraries;
    if (!cuda.why_no_device.empty()) backend["why_no_device"] = cuda.why_no_device;
    print_json({{"version", SCION_VERSION}, {"build", build}, {"cpu", cpu},
                {"cuda_backend", backend}, {"cuda_devices", cuda.devices},
                {"compute", describe_device_choice(device)}});
    return;
  }
  auto yes_no = [&](const char* key) { return build[key].get<bool>() ? "yes" : "no"; };
  std::cout << "scion " << SCION_VERSION << " (" << SCION_BUILD_TYPE << ")\n"
            << "build: cuda plugin " << yes_no("cuda_plugin") << " (nccl " << yes_no("nccl")
            << "), mpi " << yes_no("mpi") << ", sanitizers " << SCION_SANITIZE << "\n";
  std::cout << "cpu: oneDNN " << onednn.version << ", isa " << onednn.isa << ", bf16 "
            << (onednn.native_bf16 ? "native"
                : onednn.bf16_kernel ? "emulated by oneDNN (no bf16 instructions)"
                                     : "emulated in fp32 (no bf16 instructions; fp32 is faster here)")
            << "\n";
  std::cout << "cpu: OpenBLAS " << choice.openblas_core << " kernels; fp32 products:";
  for (int c = 0; c < runtime::cpu::kProductClasses; ++c)
    std::cout << " " << runtime::cpu::product_class_name(static_cast<runtime::cpu::ProductClass>(c))
              << " " << runtime::cpu::matmul_library_name(choice.classes[c].library);
  std::cout << " (" << choice.how << ")\n";
  if (cuda.loaded)
    std::cout << "cuda backend: loaded " << cuda.plugin_path << " (" << cuda.libraries << ")\n";
  else if (!cuda.plugin_path.empty())
    std::cout << "cuda backend: not loaded from " << cuda.plugin_path << "\n";
  else
    std::cout << "cuda backend: not loaded (no plugin found)\n";
  for (const std::string& line : cuda.devices) std::cout << "device: " << line << "\n";
  if (!cuda.why_no_device.empty()) std::cout << "device: none: " << cuda.why_no_device << "\n";
  std::cout << "compute: " << describe_device_choice(device) << "\n";
}

}  // namespace scion::cli
