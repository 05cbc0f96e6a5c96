// CUDA device query for `scion --version`: the first translation unit built by nvcc.
#include <cuda_runtime.h>

#include <cstdio>
#include <string>
#include <vector>

#include "runtime/device_info.h"

namespace scion::runtime {

std::vector<std::string> describe_cuda_devices() {
  int count = 0;
  cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess) return {std::string("no CUDA device usable: ") + cudaGetErrorString(err)};
  if (count == 0) return {"no CUDA device found"};
  std::vector<std::string> lines;
  for (int i = 0; i < count; ++i) {
    cudaDeviceProp prop{};
    if (cudaGetDeviceProperties(&prop, i) != cudaSuccess) continue;
    char memory[32];
    snprintf(memory, sizeof memory, "%.1f GiB", static_cast<double>(prop.totalGlobalMem) / (1 << 30));
    lines.push_back("cuda:" + std::to_string(i) + " " + prop.name + ", " + memory + ", sm_" +
                    std::to_string(prop.major) + std::to_string(prop.minor));
  }
  return lines;
}

}  // namespace scion::runtime
