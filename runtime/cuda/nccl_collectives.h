// The plugin's NCCL entries (plugin_abi.h: nccl_unique_id, nccl_prepare, nccl_init,
// nccl_all_reduce_sum, nccl_destroy); built only when NCCL is found.
//
// Communicators are non-blocking (ncclConfig_t::blocking = 0): ncclCommInitRankConfig
// returns at once and nccl_init polls until the start completes or its timeout passes, so
// a rank whose peer failed before joining stops waiting instead of hanging in
// ncclCommInitRank (the ranks then agree over MPI that NCCL did not start:
// runtime/comm/nccl_reducer.h). Calls on a non-blocking communicator may return
// ncclInProgress; every entry here waits for the pending work itself, so callers see a
// finished call or an error.
//
// A communicator runs its collectives on a stream of its own, created blocking (not
// cudaStreamNonBlocking): the legacy default stream, on which every op of the backend
// runs, and a blocking stream wait for each other's earlier work, so the sums start after
// the backward that wrote the gradients and the update after the sums, with no event.
// nccl_all_reduce_sum then waits on the host for its stream, polling ncclCommGetAsyncError
// while it waits: a peer's failure that NCCL detects aborts the communicator and comes
// back as an error instead of a hang.
#pragma once

#include <stddef.h>

namespace scion::runtime::cuda {

int nccl_unique_id(unsigned char* id, char* error, size_t capacity);
int nccl_prepare(int device, void** comm, char* error, size_t capacity);
int nccl_init(void* comm, const unsigned char* id, int ranks, int rank, int timeout_ms, char* error,
              size_t capacity);
int nccl_all_reduce_sum(void* comm, float* const* data, const size_t* counts, size_t runs,
                        char* error, size_t capacity);
void nccl_destroy(void* comm);

}  // namespace scion::runtime::cuda
