// The C interface between scion and its CUDA backend plugin (libscion_cuda.so).
//
// The scion binary links no CUDA library: a CPU user must never need one. The CUDA part
// is a shared module, built when nvcc is found, that scion opens with dlopen at run time
// (runtime/cuda_plugin.h). The two sides meet only through this table of plain C
// functions, so the plugin may be built by nvcc and the binary by the host compiler, and
// a plugin of another ABI version is refused instead of called.
#pragma once

#include <stddef.h>

#define SCION_CUDA_PLUGIN_ABI_VERSION 1
#define SCION_CUDA_PLUGIN_ENTRY "scion_cuda_plugin"

extern "C" {

struct ScionCudaPlugin {
  int abi_version;  // SCION_CUDA_PLUGIN_ABI_VERSION of the plugin's build
  // Writes one line per CUDA device ("cuda:0 NVIDIA H100 80GB HBM3, 79.1 GiB, sm_90"),
  // each ending in '\n', into `out` (at most `capacity` bytes, NUL-terminated). Returns the
  // number of devices, or -1 when CUDA is not usable; `out` then says why (no driver, ...).
  int (*describe_devices)(char* out, size_t capacity);
  // The libraries the plugin was linked against and their run-time versions
  // ("CUDA runtime 13000, cuBLAS 130100, cuDNN 91400, NCCL 22704"), NUL-terminated.
  void (*describe_libraries)(char* out, size_t capacity);
};

// The plugin's one exported symbol, named by SCION_CUDA_PLUGIN_ENTRY.
typedef const ScionCudaPlugin* (*ScionCudaPluginEntry)(void);

}  // extern "C"
