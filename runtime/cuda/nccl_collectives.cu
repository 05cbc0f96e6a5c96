#include <cuda_runtime.h>
#include <nccl.h>

#include <chrono>
#include <cstring>
#include <string>
#include <thread>

#include "runtime/cuda/nccl_collectives.h"
#include "runtime/cuda/plugin_abi.h"

static_assert(SCION_NCCL_ID_BYTES == NCCL_UNIQUE_ID_BYTES &&
                  sizeof(ncclUniqueId) == NCCL_UNIQUE_ID_BYTES,
              "plugin_abi.h's SCION_NCCL_ID_BYTES must be this NCCL's unique id size");

namespace scion::runtime::cuda {
namespace {

// One rank's communicator and the stream its collectives run on.
struct NcclRank {
  ncclComm_t comm = nullptr;  // null once aborted
  cudaStream_t stream = nullptr;
  int device = 0;
};

int failed(const std::string& text, char* error, size_t capacity) {
  if (capacity > 0) {
    const size_t n = text.size() < capacity - 1 ? text.size() : capacity - 1;
    std::memcpy(error, text.data(), n);
    error[n] = '\0';
  }
  return -1;
}

std::string nccl_text(ncclResult_t result, ncclComm_t comm) {
  std::string text = ncclGetErrorString(result);
  if (comm != nullptr) {
    const char* last = ncclGetLastError(comm);
    if (last != nullptr && *last != '\0') text += std::string(" (") + last + ")";
  }
  return text;
}

}  // namespace

int nccl_unique_id(unsigned char* id, char* error, size_t capacity) {
  ncclUniqueId unique{};
  if (const ncclResult_t r = ncclGetUniqueId(&unique); r != ncclSuccess)
    return failed("ncclGetUniqueId: " + nccl_text(r, nullptr), error, capacity);
  std::memcpy(id, unique.internal, NCCL_UNIQUE_ID_BYTES);
  return 0;
}

int nccl_init(int device, const unsigned char* id, int ranks, int rank, void** comm, char* error,
              size_t capacity) {
  *comm = nullptr;
  if (const cudaError_t err = cudaSetDevice(device); err != cudaSuccess)
    return failed("cudaSetDevice(" + std::to_string(device) + "): " + cudaGetErrorString(err),
                  error, capacity);
  auto* state = new NcclRank;
  state->device = device;
  if (const cudaError_t err = cudaStreamCreate(&state->stream); err != cudaSuccess) {
    delete state;
    return failed(std::string("cudaStreamCreate: ") + cudaGetErrorString(err), error, capacity);
  }
  ncclUniqueId unique{};
  std::memcpy(unique.internal, id, NCCL_UNIQUE_ID_BYTES);
  if (const ncclResult_t r = ncclCommInitRank(&state->comm, ranks, unique, rank);
      r != ncclSuccess) {
    cudaStreamDestroy(state->stream);
    delete state;
    return failed("ncclCommInitRank (rank " + std::to_string(rank) + " of " +
                      std::to_string(ranks) + "): " + nccl_text(r, nullptr),
                  error, capacity);
  }
  *comm = state;
  return 0;
}

int nccl_all_reduce_sum(void* comm, float* const* data, const size_t* counts, size_t runs,
                        char* error, size_t capacity) {
  auto* state = static_cast<NcclRank*>(comm);
  if (state == nullptr || state->comm == nullptr)
    return failed("the NCCL communicator was aborted by an earlier failure", error, capacity);
  if (const cudaError_t err = cudaSetDevice(state->device); err != cudaSuccess)
    return failed(std::string("cudaSetDevice: ") + cudaGetErrorString(err), error, capacity);
  // One group: NCCL fuses the runs' launches instead of one per gradient tensor.
  ncclResult_t r = ncclGroupStart();
  for (size_t i = 0; i < runs && r == ncclSuccess; ++i)
    if (counts[i] > 0)
      r = ncclAllReduce(data[i], data[i], counts[i], ncclFloat, ncclSum, state->comm,
                        state->stream);
  // ncclGroupEnd must close the group even when a call inside it failed.
  const ncclResult_t end = ncclGroupEnd();
  if (r == ncclSuccess) r = end;
  if (r != ncclSuccess)
    return failed("ncclAllReduce: " + nccl_text(r, state->comm), error, capacity);
  for (;;) {
    const cudaError_t query = cudaStreamQuery(state->stream);
    if (query == cudaSuccess) return 0;
    if (query != cudaErrorNotReady)
      return failed(
          std::string("the NCCL all-reduce failed on the device: ") + cudaGetErrorString(query),
          error, capacity);
    ncclResult_t async = ncclSuccess;
    if (ncclCommGetAsyncError(state->comm, &async) == ncclSuccess && async != ncclSuccess &&
        async != ncclInProgress) {
      const std::string text = nccl_text(async, state->comm);
      ncclCommAbort(state->comm);
      state->comm = nullptr;
      return failed("the NCCL all-reduce failed (a peer is gone?): " + text, error, capacity);
    }
    std::this_thread::sleep_for(std::chrono::microseconds(20));
  }
}

void nccl_destroy(void* comm) {
  auto* state = static_cast<NcclRank*>(comm);
  if (state == nullptr) return;
  cudaSetDevice(state->device);
  if (state->comm != nullptr) ncclCommDestroy(state->comm);
  if (state->stream != nullptr) cudaStreamDestroy(state->stream);
  delete state;
}

}  // namespace scion::runtime::cuda
