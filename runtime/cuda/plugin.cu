// libscion_cuda.so: the CUDA backend plugin (plugin_abi.h). Built only by nvcc, loaded by
// scion at run time; everything CUDA lives behind this file's exported table.
//
// Today it answers what the device query needs (devices, library versions). The Backend
// ops (matmuls on cuBLASLt, the llm.c-style kernels) are not implemented yet, which is why
// `--device cuda` is refused even where a device is present (cli/device_choice.cpp).
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cstdio>
#include <cstring>
#include <string>

#include "runtime/cuda/plugin_abi.h"
#include "scion_config.h"

#if SCION_HAVE_CUDNN
#include <cudnn.h>
#endif
#if SCION_HAVE_NCCL
#include <nccl.h>
#endif

namespace {

void copy_out(const std::string& text, char* out, size_t capacity) {
  if (capacity == 0) return;
  const size_t n = text.size() < capacity - 1 ? text.size() : capacity - 1;
  std::memcpy(out, text.data(), n);
  out[n] = '\0';
}

int describe_devices(char* out, size_t capacity) {
  int count = 0;
  const cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess) {
    copy_out(std::string("no CUDA device usable: ") + cudaGetErrorString(err), out, capacity);
    return -1;
  }
  std::string lines;
  for (int i = 0; i < count; ++i) {
    cudaDeviceProp prop{};
    if (cudaGetDeviceProperties(&prop, i) != cudaSuccess) continue;
    char line[512];
    std::snprintf(line, sizeof line, "cuda:%d %s, %.1f GiB, sm_%d%d\n", i, prop.name,
                  static_cast<double>(prop.totalGlobalMem) / (1 << 30), prop.major, prop.minor);
    lines += line;
  }
  copy_out(lines, out, capacity);
  return count;
}

void describe_libraries(char* out, size_t capacity) {
  int runtime_version = 0;
  cudaRuntimeGetVersion(&runtime_version);
  int major = 0, minor = 0, patch = 0;
  cublasGetProperty(MAJOR_VERSION, &major);
  cublasGetProperty(MINOR_VERSION, &minor);
  cublasGetProperty(PATCH_LEVEL, &patch);
  std::string text = "CUDA runtime " + std::to_string(runtime_version) + ", cuBLAS " +
                     std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(patch);
#if SCION_HAVE_CUDNN
  text += ", cuDNN " + std::to_string(cudnnGetVersion());
#endif
#if SCION_HAVE_NCCL
  int nccl_version = 0;
  if (ncclGetVersion(&nccl_version) == ncclSuccess) text += ", NCCL " + std::to_string(nccl_version);
#endif
  copy_out(text, out, capacity);
}

constexpr ScionCudaPlugin kPlugin = {SCION_CUDA_PLUGIN_ABI_VERSION, describe_devices, describe_libraries};

}  // namespace

extern "C" __attribute__((visibility("default"))) const ScionCudaPlugin* scion_cuda_plugin(void) {
  return &kPlugin;
}
