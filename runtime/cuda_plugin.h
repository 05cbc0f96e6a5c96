// Finding and opening the CUDA backend plugin (cuda/plugin_abi.h) at run time.
//
// The scion binary links no CUDA library; this is the only place that reaches CUDA, by
// dlopen of libscion_cuda.so. Where the plugin is looked for:
//   - $SCION_CUDA_PLUGIN, a path to the plugin file, when set: that file alone (tests use
//     it to hide the plugin);
//   - else, relative to the folder of the running executable (as an $ORIGIN rpath): next to
//     it; ../runtime/cuda/ (the build tree's layout: every scion executable sits one
//     folder below the build root); the installation's libdir/scion/ reached from bindir;
//     then <prefix>/<libdir>/scion/ as configured.
// The first of these files that exists is opened, so a build folder that is moved or
// copied, or an installation moved with its prefix, opens its own plugin, never another
// build's. A plugin that is missing, cannot load (its CUDA libraries are absent: the
// loader's message names the missing one) or has another ABI version is reported, never
// fatal: scion then runs on the CPU. Thread-safe; the plugin is opened once per process.
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
  std::string plugin_path;  // the file opened (or that failed to open); empty when none was found
  std::vector<std::string> plugin_candidates;  // every file looked for, in order
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

struct CudaBackendOptions {
  // fp32 products may run on TF32 tensor cores (faster, about 1e-3 relative error).
  bool allow_tf32 = false;
  // Every linear-layer product runs on cublasGemmEx, the path it takes when cuBLASLt's
  // heuristic offers no algorithm for its shape (runtime/cuda/lt_matmul.h): for the op
  // harness, which compares that fallback on every shape.
  bool products_on_cublas = false;
};

// The CUDA backend on cuda_device_for_this_process(), in `precision`: where model code and
// the op harness (tests/backend/) get it. Errors (kUnavailable), saying why: the plugin was
// not built or did not load, no device is usable, or the backend could not start on it
// (cuBLAS, memory). The object comes from the plugin (plugin_abi.h: same build, same
// compiler) and is deleted as any Backend.
Result<std::unique_ptr<Backend>> make_cuda_backend(Precision precision,
                                                   const CudaBackendOptions& options = {});

}  // namespace scion::runtime
