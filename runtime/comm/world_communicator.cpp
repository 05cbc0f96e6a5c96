// world_communicator(): MPI when launched as one of several ranks, else one process.
#include <memory>
#include <string>

#include "runtime/comm/communicator.h"
#include "runtime/comm/launch_environment.h"
#include "scion_config.h"

#if SCION_HAVE_MPI
#include "runtime/comm/mpi_communicator.h"
#endif

namespace scion::runtime {
namespace {

std::unique_ptr<Communicator>& world() {
  static std::unique_ptr<Communicator> communicator;
  return communicator;
}

}  // namespace

Result<Communicator*> world_communicator() {
  if (world()) return world().get();
  const std::optional<LaunchedRank> launched = launched_rank();
  if (!launched) {
    world() = std::make_unique<SingleProcessCommunicator>();
    return world().get();
  }
#if SCION_HAVE_MPI
  auto mpi = make_mpi_communicator();
  if (!mpi) return mpi.status();
  world() = std::move(*mpi);
  return world().get();
#else
  return Status(StatusCode::kUnavailable,
                "started as rank " + std::to_string(launched->rank) + " of " + std::to_string(launched->size) +
                    " by mpirun, but this scion was built without MPI; install libopenmpi-dev and "
                    "reconfigure with -Dmpi=enabled, or run scion without mpirun");
#endif
}

void finalize_world_communicator() {
#if SCION_HAVE_MPI
  finalize_mpi();
#endif
}

}  // namespace scion::runtime
