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
//
// Version 3 makes the backend on a chosen device (one GPU per rank of a data-parallel
// job), names a device by its UUID (so the ranks can tell whether they share one), and
// adds NCCL: a unique id made by rank 0 and sent to the others through MPI by scion
// (runtime/comm/nccl_reducer.h), one communicator per rank, and the in-place sum of the
// gradients on the devices.
//
// Version 4 splits the start of a communicator in two, nccl_prepare (this rank alone) and
// nccl_init (collective, with a bounded wait), so that the ranks can agree over MPI on
// each half before going on, and adds the SCION_CUDA_PRODUCTS_ON_CUBLAS flag.
#pragma once

#include <stddef.h>

namespace scion::runtime {
class Backend;
}

#define SCION_CUDA_PLUGIN_ABI_VERSION 5
#define SCION_CUDA_PLUGIN_ENTRY "scion_cuda_plugin"

// create_backend's flags.
#define SCION_CUDA_ALLOW_TF32 1u  // fp32 products may use TF32 tensor cores
// Every linear-layer product runs on cublasGemmEx, as when cuBLASLt offers no algorithm
// (tests compare that fallback on every shape).
#define SCION_CUDA_PRODUCTS_ON_CUBLAS 2u

// The size of an NCCL unique id (NCCL_UNIQUE_ID_BYTES; the plugin checks that they agree).
#define SCION_NCCL_ID_BYTES 128

extern "C" {

struct ScionCudaPlugin {
  int abi_version;  // SCION_CUDA_PLUGIN_ABI_VERSION of the plugin's build
  // Writes one line per CUDA device ("cuda:0 NVIDIA H100 80GB HBM3, 79.1 GiB, sm_90"),
  // each ending in '\n', into `out` (at most `capacity` bytes, NUL-terminated). Returns the
  // number of devices, or -1 when CUDA is not usable; `out` then says why (no driver, ...).
  int (*describe_devices)(char* out, size_t capacity);
  // The libraries the plugin was linked against and their run-time versions
  // ("CUDA runtime 13000, cuBLAS 13.1.0, NCCL 22807"), NUL-terminated.
  void (*describe_libraries)(char* out, size_t capacity);
  // A new CUDA backend on device `device` (0 .. count-1) in `precision` (0 fp32, 1 bf16:
  // runtime::Precision's values) with `flags` (SCION_CUDA_*), owned by the caller (delete
  // it). It makes `device` the calling thread's current device. Null when it cannot be
  // made; `error` (at most `capacity` bytes, NUL-terminated) then says why.
  scion::runtime::Backend* (*create_backend)(int device, int precision, unsigned flags,
                                             char* error, size_t capacity);
  // The UUID of `device` as 32 hex digits, NUL-terminated in `out`: 0, or -1 with `out`
  // saying why.
  int (*device_uuid)(int device, char* out, size_t capacity);

  // NCCL. All five are null when the plugin was built without NCCL. Each returns 0, or -1
  // with the reason in `error` (at most `capacity` bytes, NUL-terminated).
  //
  // A new unique id (ncclGetUniqueId) in `id` (SCION_NCCL_ID_BYTES bytes): rank 0 makes
  // it, every rank passes it to nccl_init.
  int (*nccl_unique_id)(unsigned char* id, char* error, size_t capacity);
  // This rank's side of a communicator on `device`, in *comm: the device made current and
  // the stream its collectives will run on. Local: no other rank is involved. Release it
  // with nccl_destroy, whether or not nccl_init follows.
  int (*nccl_prepare)(int device, void** comm, char* error, size_t capacity);
  // Starts the communicator prepared in `comm` as rank `rank` of `ranks`
  // (ncclCommInitRankConfig, non-blocking; collective: every rank calls it with the same
  // id), waiting at most `timeout_ms` for the others to join: when one never does (it
  // failed before), this fails with a timeout instead of waiting for ever.
  int (*nccl_init)(void* comm, const unsigned char* id, int ranks, int rank, int timeout_ms,
                   char* error, size_t capacity);
  // Sums `runs` fp32 arrays of device memory over the ranks, in place, on the stream the
  // backend's ops run on (one NCCL group), and waits for the sums: when it returns 0 the
  // device holds them. Every rank calls it with the same counts in the same order.
  int (*nccl_all_reduce_sum)(void* comm, float* const* data, const size_t* counts, size_t runs,
                             char* error, size_t capacity);
  // Ends the communicator (ncclCommFinalize, then ncclCommDestroy; ncclCommAbort when it
  // cannot finalize) and frees what nccl_prepare made; null is ignored.
  void (*nccl_destroy)(void* comm);
};

// The plugin's one exported symbol, named by SCION_CUDA_PLUGIN_ENTRY.
typedef const ScionCudaPlugin* (*ScionCudaPluginEntry)(void);

}  // extern "C"
