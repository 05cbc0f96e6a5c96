// Finding and opening the CUDA backend plugin (cuda/plugin_abi.h) at run time.
//
// The scion binary links no CUDA library; this is the only place that reaches CUDA, by
// dlopen of libscion_cuda.so. Where the plugin is looked for, in order:
//   1. $SCION_CUDA_PLUGIN, a path to the plugin file (tests use it to hide the plugin);
//   2. the build tree's plugin, when this scion runs from its build tree;
//   3. <libdir>/scion/libscion_cuda.so of the installation.
// A plugin that is missing, cannot load (its CUDA libraries are absent: the loader's
// message names the missing one) or has another ABI version is reported, never fatal:
// scion then runs on the CPU. Thread-safe; the plugin is opened once per process.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "runtime/backend.h"
#include "base/status.h"

struct ScionCudaPlugin;  // runtime/cuda/plugin_abi.h (a C struct at global scope)

namespace scion::runtime {

struct CudaBackendInfo {
  bool built = false;   // this scion was built with the CUDA plugin (nvcc was found)
  bool loaded = false;  // the plugin opened, with all its CUDA libraries
  std::string plugin_path;  // where it was looked for (empty when not built)
  std::string libraries;    // loaded: the CUDA library versions it runs with
  // One line per device when loaded and CUDA is usable (empty when there is none).
  std::vector<std::string> devices;
  // Empty when at least one device is usable; else why not, in words a user can act on.
  std::string why_no_device;
};

// Opens the plugin on the first call and describes it; later calls return the same.
const CudaBackendInfo& cuda_backend_info();

// The device this process's CUDA backends run on: its local rank (launch_environment.h)
// modulo the devices it sees, so that the ranks of one machine take one GPU each; 0 when
// started alone. Ranks outnumbering the GPUs share them (data parallelism then sums the
// gradients through the host: runtime/comm/nccl_reducer.h).
int cuda_device_for_this_process();

// The plugin's table once it loaded with the right ABI version, else null: for the NCCL
// collectives (runtime/comm/nccl_reducer.h).
const ScionCudaPlugin* loaded_cuda_plugin();

// The CUDA backend on cuda_device_for_this_process(), in `precision`: where model code and
// the op harness (tests/backend/) get it. allow_tf32: fp32 products may run on TF32 tensor cores
// (faster, about 1e-3 relative error; off by default). Errors (kUnavailable), saying why:
// the plugin was not built or did not load, no device is usable, or the backend could not
// start on it (cuBLAS, memory). The object comes from the plugin (plugin_abi.h: same build,
// same compiler) and is deleted as any Backend.
Result<std::unique_ptr<Backend>> make_cuda_backend(Precision precision, bool allow_tf32 = false);

}  // namespace scion::runtime
