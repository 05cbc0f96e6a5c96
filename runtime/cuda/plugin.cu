// libscion_cuda.so: the CUDA backend plugin (plugin_abi.h). Built only by nvcc, loaded by
// scion at run time; everything CUDA lives behind this file's exported table.
//
// It answers the device query (devices, library versions, UUIDs) and makes the CUDA
// Backend (cuda_backend.h): every op of runtime/backend.h, products on cuBLASLt and
// cuBLAS, the rest kernels. Built with NCCL, it also carries the NCCL collectives
// (nccl_collectives.h) for data parallelism between GPUs.
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cstdio>
#include <cstring>
#include <memory>
#include <string>

#include "runtime/cuda/cuda_backend.h"
#include "runtime/cuda/plugin_abi.h"
#include "scion_config.h"

#if SCION_HAVE_NCCL
#include <nccl.h>

#include "runtime/cuda/nccl_collectives.h"
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
  // One line per device, in CUDA's order, so that line i is device i (scion picks a device
  // by its line): a device whose properties cannot be read still gets its line, saying
  // so. The count returned is the number of lines written, never more: lines that would
  // not fit in `out` are left out, and not counted.
  const size_t room = capacity > 0 ? capacity - 1 : 0;
  std::string lines;
  int listed = 0;
  for (int i = 0; i < count; ++i) {
    cudaDeviceProp prop{};
    char line[512];
    if (const cudaError_t prop_err = cudaGetDeviceProperties(&prop, i); prop_err != cudaSuccess)
      std::snprintf(line, sizeof line, "cuda:%d (its properties cannot be read: %s)\n", i,
                    cudaGetErrorString(prop_err));
    else
      std::snprintf(line, sizeof line, "cuda:%d %s, %.1f GiB, sm_%d%d\n", i, prop.name,
                    static_cast<double>(prop.totalGlobalMem) / (1 << 30), prop.major, prop.minor);
    if (lines.size() + std::strlen(line) > room) break;
    lines += line;
    ++listed;
  }
  copy_out(lines, out, capacity);
  return listed;
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
#if SCION_HAVE_NCCL
  int nccl_version = 0;
  if (ncclGetVersion(&nccl_version) == ncclSuccess) text += ", NCCL " + std::to_string(nccl_version);
#endif
  copy_out(text, out, capacity);
}

scion::runtime::Backend* create_backend(int device, int precision, unsigned flags, char* error,
                                        size_t capacity) {
  if (precision != static_cast<int>(scion::runtime::Precision::kF32) &&
      precision != static_cast<int>(scion::runtime::Precision::kBF16)) {
    copy_out("unknown precision " + std::to_string(precision), error, capacity);
    return nullptr;
  }
  if (const cudaError_t err = cudaSetDevice(device); err != cudaSuccess) {
    copy_out("CUDA device " + std::to_string(device) + " is not usable: " + cudaGetErrorString(err), error,
             capacity);
    return nullptr;
  }
  std::string why;
  const scion::runtime::cuda::BackendFlags backend_flags{
      .allow_tf32 = (flags & SCION_CUDA_ALLOW_TF32) != 0,
      .products_on_cublas = (flags & SCION_CUDA_PRODUCTS_ON_CUBLAS) != 0};
  std::unique_ptr<scion::runtime::Backend> backend = scion::runtime::cuda::make_backend(
      static_cast<scion::runtime::Precision>(precision), backend_flags, &why);
  if (!backend) {
    copy_out(why, error, capacity);
    return nullptr;
  }
  return backend.release();
}

int device_uuid(int device, char* out, size_t capacity) {
  cudaDeviceProp prop{};
  if (const cudaError_t err = cudaGetDeviceProperties(&prop, device); err != cudaSuccess) {
    copy_out(std::string("cudaGetDeviceProperties: ") + cudaGetErrorString(err), out, capacity);
    return -1;
  }
  std::string hex;
  for (const char byte : prop.uuid.bytes) {
    char digits[3];
    std::snprintf(digits, sizeof digits, "%02x", static_cast<unsigned char>(byte));
    hex += digits;
  }
  copy_out(hex, out, capacity);
  return 0;
}

#if SCION_HAVE_NCCL
constexpr ScionCudaPlugin kPlugin = {SCION_CUDA_PLUGIN_ABI_VERSION,
                                     describe_devices,
                                     describe_libraries,
                                     create_backend,
                                     device_uuid,
                                     scion::runtime::cuda::nccl_unique_id,
                                     scion::runtime::cuda::nccl_prepare,
                                     scion::runtime::cuda::nccl_init,
                                     scion::runtime::cuda::nccl_all_reduce_sum,
                                     scion::runtime::cuda::nccl_destroy};
#else
constexpr ScionCudaPlugin kPlugin = {SCION_CUDA_PLUGIN_ABI_VERSION,
                                     describe_devices,
                                     describe_libraries,
                                     create_backend,
                                     device_uuid,
                                     nullptr,
                                     nullptr,
                                     nullptr,
                                     nullptr,
                                     nullptr};
#endif

}  // namespace

extern "C" __attribute__((visibility("default"))) const ScionCudaPlugin* scion_cuda_plugin(void) {
  return &kPlugin;
}
