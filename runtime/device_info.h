// What compute devices this build of scion can use, for `scion --version`.
#pragma once

#include <string>
#include <vector>

namespace scion::runtime {

// One line per usable CUDA device ("cuda:0 NVIDIA H100 80GB HBM3, 79.1 GiB, sm_90"),
// or a single line saying why there is none (not built with CUDA, no driver, no device).
std::vector<std::string> describe_cuda_devices();

}  // namespace scion::runtime
