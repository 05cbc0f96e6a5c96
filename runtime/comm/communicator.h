// Communicator: the processes (ranks) of one mpirun job and the collectives that
// training, testing and evaluation need from them.
//
// scion runs as one process (SingleProcessCommunicator) unless `mpirun -np N` started it,
// in which case every rank holds a MpiCommunicator over MPI_COMM_WORLD (mpi_communicator.h,
// built when MPI is found). Data parallelism (data_parallel.h) splits each step's rows
// across the ranks and sums their gradients with all_reduce_sum, so that every rank
// applies the same update. Task-parallel training exchanges each wave's outcomes with
// all_gather; sharded evaluation sends each rank's outputs to rank 0 with gather.
//
// Every collective must be called by every rank in the same order. A rank that fails
// must still reach the next agree() with its error, so that the others stop too instead
// of waiting for it: FamilyTrainer calls agree() once per step. Not thread-safe.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace scion::runtime {

class Communicator {
 public:
  virtual ~Communicator() = default;

  virtual int rank() const = 0;  // 0 .. size()-1; rank 0 alone writes the store
  virtual int size() const = 0;

  // Sums `values` element-wise over all ranks, in place; every rank receives the same
  // bits (reduced in one fixed order, then broadcast), so their updates stay identical.
  // Errors: kUnavailable when a peer is gone.
  virtual Status all_reduce_sum(std::span<float> values) = 0;
  virtual Status all_reduce_sum(std::span<double> values) = 0;

  // Every rank passes its own status; all receive ok when every one was ok, else the
  // error of the lowest failing rank: that rank gets its own status back, the others the
  // same code with "rank R failed: " before its message. `local` kCancelled (an
  // interrupt seen by one rank) stops every rank the same way.
  virtual Status agree(const Status& local) = 0;

  // Sends each rank's `local` bytes to rank 0: rank 0 receives every rank's, in rank
  // order (its own first), the others an empty list. Sharded evaluation (workbench/
  // sharded_evaluation.h) and task-parallel training send their results to the writer
  // with it. Errors: kUnavailable when a peer is gone.
  virtual Result<std::vector<std::string>> gather(std::string_view local) = 0;

  // Every rank receives every rank's `local` bytes, in rank order: task-parallel training
  // tells the others what each rank trained. Errors: kUnavailable when a peer is gone.
  virtual Result<std::vector<std::string>> all_gather(std::string_view local) = 0;
};

// One process: every collective is the identity, agree() returns `local`.
class SingleProcessCommunicator final : public Communicator {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  Status all_reduce_sum(std::span<float>) override { return Status::ok(); }
  Status all_reduce_sum(std::span<double>) override { return Status::ok(); }
  Status agree(const Status& local) override { return local; }
  Result<std::vector<std::string>> gather(std::string_view local) override {
    return std::vector<std::string>{std::string(local)};
  }
  Result<std::vector<std::string>> all_gather(std::string_view local) override {
    return std::vector<std::string>{std::string(local)};
  }
};

// The communicator of this process: MPI's world when launched by mpirun (or srun) and
// built with MPI, else a single process. Created on the first call.
// Errors: kUnavailable when launched by mpirun but MPI cannot start, or this scion was
// built without MPI (the launch would run N unrelated copies).
Result<Communicator*> world_communicator();

// Ends MPI when world_communicator() started it; call once, before the process exits.
void finalize_world_communicator();

}  // namespace scion::runtime
