// The interface between scion and its CUDA backend plugin (libscion_cuda.so).
//
// The scion binary links no CUDA library: a CPU user must never need one. The CUDA part
// is a shared module, built when nvcc is found, that scion opens with dlopen at run time
// (runtime/cuda_plugin.h). The two sides meet only through this table, whose first field
// is the ABI version: a plugin of another version is refused instead of called.
//
// Version 2 adds the backend factory, which returns a C++ object: a
// scion::runtime::Backend (runtime/backend.h) that scion calls through its virtual
// functions and deletes through its virtual destructor. That crosses the boundary with
// the C++ ABI, not the C one, so both sides must come from the same build: the plugin's
// host code is compiled by nvcc with the same host compiler (and libstdc++) as scion,
// from the same runtime/backend.h. Meson builds both in one tree and installs them
// together; a plugin from another build or another compiler must not be loaded (the
// version check catches a different table, not a different Backend class: the Backend
// header's changes bump SCION_CUDA_PLUGIN_ABI_VERSION).
#pragma once

#include <stddef.h>

namespace scion::runtime {
class Backend;
}

#define SCION_CUDA_PLUGIN_ABI_VERSION 2
#define SCION_CUDA_PLUGIN_ENTRY "scion_cuda_plugin"

// create_backend's flags.
#define SCION_CUDA_ALLOW_TF32 1u  // fp32 products may use TF32 tensor cores

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
  // A new CUDA backend on device 0 in `precision` (0 fp32, 1 bf16: runtime::Precision's
  // values) with `flags` (SCION_CUDA_*), owned by the caller (delete it). Null when it
  // cannot be made; `error` (at most `capacity` bytes, NUL-terminated) then says why.
  scion::runtime::Backend* (*create_backend)(int precision, unsigned flags, char* error,
                                             size_t capacity);
};

// The plugin's one exported symbol, named by SCION_CUDA_PLUGIN_ENTRY.
typedef const ScionCudaPlugin* (*ScionCudaPluginEntry)(void);

}  // extern "C"
