// DeviceReducer: sums of device memory over the ranks without a trip through the host,
// for data parallelism on GPUs (data_parallel.h). The one implementation is NCCL's,
// reached through the CUDA plugin (runtime/cuda/plugin_abi.h), so the scion binary links
// neither CUDA nor NCCL.
//
// Bootstrap, through the Communicator (MPI), in three exchanges (all_gather), so that
// every rank sees the same answers and acts on them together:
//   1. whether each rank can take part, and the UUID of its GPU: if some rank cannot (on
//      the CPU, a plugin without NCCL, two ranks on one GPU), every rank takes the host
//      path (null reducer, *why_not says why);
//   2. each rank prepares its side (device, stream) and rank 0 makes an NCCL unique id,
//      sent with its answer: the ranks agree that all of them are prepared before any of
//      them enters the collective start;
//   3. each rank starts its communicator (ncclCommInitRankConfig, non-blocking) and waits
//      at most the timeout for the others (SCION_NCCL_INIT_TIMEOUT_S, default 120 s), so
//      a rank whose peer failed before joining stops waiting; the ranks agree whether
//      every one started.
// A failure in 2 or 3 on any rank is an error (kUnavailable: exit 3) on every rank, naming
// each failing rank and its reason: NCCL was possible but did not start, which a user must
// see rather than a silently slower host path.
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

struct ScionCudaPlugin;  // runtime/cuda/plugin_abi.h (a C struct at global scope)

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

// How long a rank waits for the others to start NCCL: $SCION_NCCL_INIT_TIMEOUT_S seconds,
// else kDefaultNcclInitTimeoutS. Errors: kInvalidArgument for a value that is not a whole
// number of seconds from 1 to 86400.
inline constexpr int kDefaultNcclInitTimeoutS = 120;
Result<int> nccl_init_timeout_ms();

// An NCCL reducer over comm's ranks for `backend`'s device, made collectively (every rank
// calls it at the same point). Null, with *why_not saying why, when NCCL cannot serve
// and the host path must: the backend is not CUDA on some rank, the plugin was built
// without NCCL, ranks share a GPU, or a rank's SCION_NCCL_INIT_TIMEOUT_S is invalid.
// Errors: kUnavailable on every rank when NCCL did not start on some rank (steps 2 and 3
// above); the communicator's (a rank is gone).
// REQUIRES: comm.size() > 1.
Result<std::unique_ptr<DeviceReducer>> make_nccl_reducer(Communicator& comm, const Backend& backend,
                                                         std::string* why_not);

// The same with the plugin's table, this rank's device and the wait given (the one above
// passes the loaded plugin, cuda_device_for_this_process() and nccl_init_timeout_ms();
// `timeout_problem` is that function's error, which makes this rank answer "cannot take
// part"): for tests, which give a table of their own.
Result<std::unique_ptr<DeviceReducer>> make_nccl_reducer(Communicator& comm, const Backend& backend,
                                                         const ScionCudaPlugin* plugin, int device,
                                                         int init_timeout_ms,
                                                         const std::string& timeout_problem,
                                                         std::string* why_not);

}  // namespace scion::runtime
