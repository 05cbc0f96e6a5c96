// DeviceReducer: sums of device memory over the ranks without a trip through the host,
// for data parallelism on GPUs (data_parallel.h). The one implementation is NCCL's,
// reached through the CUDA plugin (runtime/cuda/plugin_abi.h), so the scion binary links
// neither CUDA nor NCCL.
//
// Bootstrap, through the Communicator (MPI): every rank all-gathers whether it can take
// part and the UUID of its GPU; rank 0 makes an NCCL unique id, which reaches the others
// by all_gather (a broadcast from rank 0); every rank calls ncclCommInitRank; agree()
// settles the outcome. Every rank sees the same gathered answers, so all of them choose
// NCCL or all of them fall back to the host path, together.
//
// The sum is NCCL's (ncclSum over ncclFloat): the order in which it adds the ranks' values
// is NCCL's (ring or tree), not the host path's rank order, so the two agree within
// float rounding, not bit for bit. Every rank is meant to receive the same bits (each
// element is reduced once and then broadcast, in the ring and tree algorithms); NCCL does
// not document that as a guarantee. Not thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "base/status.h"
#include "runtime/backend.h"
#include "runtime/comm/communicator.h"

namespace scion::runtime {

// `count` fp32 values of backend memory at `data`.
struct DeviceRun {
  float* data = nullptr;
  std::int64_t count = 0;
};

class DeviceReducer {
 public:
  virtual ~DeviceReducer() = default;
  // Sums each run over the ranks, in place; when it returns, the device holds the sums.
  // Every rank passes the same counts in the same order. Errors: kUnavailable (a peer
  // is gone, NCCL failed).
  virtual Status all_reduce_sum(std::span<const DeviceRun> runs) = 0;
  // What it runs on, for the note that says so ("NCCL between 2 GPUs").
  virtual std::string describe() const = 0;
};

// The verdict on the ranks' all-gathered answers to "can you take part", in rank order,
// each "1 <UUID of its GPU>" or "0 <why not>": empty when NCCL can serve every rank (each
// ready, no GPU twice), else why not, naming the lowest rank concerned.
std::string why_not_nccl(const std::vector<std::string>& answers);

// An NCCL reducer over comm's ranks for `backend`'s device, made collectively (every rank
// calls it at the same point). Null, with *why_not saying why, when NCCL cannot serve
// and the host path must: the backend is not CUDA on some rank, the plugin was built
// without NCCL, ranks share a GPU, or NCCL would not start. Errors: the communicator's
// (a rank is gone).
// REQUIRES: comm.size() > 1.
Result<std::unique_ptr<DeviceReducer>> make_nccl_reducer(Communicator& comm, const Backend& backend,
                                                         std::string* why_not);

}  // namespace scion::runtime
