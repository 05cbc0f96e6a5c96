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

// Polls a non-blocking communicator's state until its pending work (start, enqueue,
// finalize) is done: ncclSuccess, an error, or ncclInProgress when `timeout_ms` passed
// first (a negative timeout waits without end).
ncclResult_t wait_while_in_progress(ncclComm_t comm, int timeout_ms) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  for (;;) {
    ncclResult_t state = ncclSuccess;
    if (const ncclResult_t r = ncclCommGetAsyncError(comm, &state); r != ncclSuccess) return r;
    if (state != ncclInProgress) return state;
    if (timeout_ms >= 0 && std::chrono::steady_clock::now() >= deadline) return ncclInProgress;
    std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
}

}  // namespace

int nccl_unique_id(unsigned char* id, char* error, size_t capacity) {
  ncclUniqueId unique{};
  if (const ncclResult_t r = ncclGetUniqueId(&unique); r != ncclSuccess)
    return failed("ncclGetUniqueId: " + nccl_text(r, nullptr), error, capacity);
  std::memcpy(id, unique.internal, NCCL_UNIQUE_ID_BYTES);
  return 0;
}

int nccl_prepare(int device, void** comm, char* error, size_t capacity) {
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
  *comm = state;
  return 0;
}

int nccl_init(void* comm, const unsigned char* id, int ranks, int rank, int timeout_ms, char* error,
              size_t capacity) {
  auto* state = static_cast<NcclRank*>(comm);
  const std::string who =
      "ncclCommInitRank (rank " + std::to_string(rank) + " of " + std::to_string(ranks) + ")";
  if (const cudaError_t err = cudaSetDevice(state->device); err != cudaSuccess)
    return failed(std::string("cudaSetDevice: ") + cudaGetErrorString(err), error, capacity);
  ncclUniqueId unique{};
  std::memcpy(unique.internal, id, NCCL_UNIQUE_ID_BYTES);
  // Non-blocking: ncclCommInitRankConfig returns at once and the start completes in the
  // background, so this rank can stop waiting for a peer that never comes.
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  ncclComm_t started = nullptr;
  ncclResult_t r = ncclCommInitRankConfig(&started, ranks, unique, rank, &config);
  if (r != ncclSuccess && r != ncclInProgress) {
    if (started != nullptr) ncclCommAbort(started);
    return failed(who + ": " + nccl_text(r, nullptr), error, capacity);
  }
  r = wait_while_in_progress(started, timeout_ms);
  if (r != ncclSuccess) {
    const std::string text =
        r == ncclInProgress
            ? "timed out after " + std::to_string(timeout_ms / 1000) +
                  " s waiting for the other ranks (one failed before joining, or they cannot "
                  "reach each other)"
            : nccl_text(r, started);
    ncclCommAbort(started);
    return failed(who + ": " + text, error, capacity);
  }
  state->comm = started;
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
  // The communicator is non-blocking (nccl_init): the group may still be being enqueued
  // (ncclInProgress). Wait for that before looking at the stream, which is empty until
  // then. A peer that is gone shows as an error here or below.
  if (r == ncclInProgress) r = wait_while_in_progress(state->comm, -1);
  if (r != ncclSuccess) {
    const std::string text = nccl_text(r, state->comm);
    ncclCommAbort(state->comm);
    state->comm = nullptr;
    return failed("ncclAllReduce: " + text, error, capacity);
  }
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
  if (state->comm != nullptr) {
    // A non-blocking communicator is finalized (its peers reach quiescence together)
    // before it is destroyed; one that cannot finalize in time is aborted instead.
    constexpr int kFinalizeTimeoutMs = 30000;
    ncclResult_t r = ncclCommFinalize(state->comm);
    if (r == ncclInProgress) r = wait_while_in_progress(state->comm, kFinalizeTimeoutMs);
    if (r == ncclSuccess)
      ncclCommDestroy(state->comm);
    else
      ncclCommAbort(state->comm);
  }
  if (state->stream != nullptr) cudaStreamDestroy(state->stream);
  delete state;
}

}  // namespace scion::runtime::cuda
