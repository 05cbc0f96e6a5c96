// The plugin's NCCL entries (plugin_abi.h: nccl_unique_id, nccl_init,
// nccl_all_reduce_sum, nccl_destroy); built only when NCCL is found.
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
int nccl_init(int device, const unsigned char* id, int ranks, int rank, void** comm, char* error,
              size_t capacity);
int nccl_all_reduce_sum(void* comm, float* const* data, const size_t* counts, size_t runs,
                        char* error, size_t capacity);
void nccl_destroy(void* comm);

}  // namespace scion::runtime::cuda
