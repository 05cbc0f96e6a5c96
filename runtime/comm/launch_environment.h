// Whether this process was started as one rank of several (mpirun, srun), read from the
// environment the launchers set, before MPI itself is touched.
#pragma once

#include <optional>

namespace scion::runtime {

struct LaunchedRank {
  int rank = 0;
  int size = 1;
};

// The rank and world size the launcher announced (Open MPI's OMPI_COMM_WORLD_*, PMIx's
// and PMI_RANK/PMI_SIZE of MPICH's Hydra and of srun with PMI),
// or nullopt when this process was started alone.
std::optional<LaunchedRank> launched_rank();

// This process's rank among the ranks of its machine (Open MPI's
// OMPI_COMM_WORLD_LOCAL_RANK, MPICH Hydra's MPI_LOCALRANKID, srun's SLURM_LOCALID when
// srun started the ranks), or nullopt when started alone or the launcher does not say.
// A rank's GPU is chosen by it (cuda_plugin.h).
std::optional<int> local_rank();

}  // namespace scion::runtime
