// MpiCommunicator: the Communicator over MPI_COMM_WORLD (built when MPI is found).
//
// Collectives return errors instead of aborting (MPI_ERRORS_RETURN), so a peer that is
// gone surfaces as kUnavailable here; a peer that was killed usually makes mpirun end
// the whole job first (docs/distributed.md).
#pragma once

#include <memory>

#include "runtime/comm/communicator.h"

namespace scion::runtime {

// Initialises MPI. Errors: kUnavailable when MPI_Init fails.
Result<std::unique_ptr<Communicator>> make_mpi_communicator();

// MPI_Finalize, when MPI was initialised and not yet finalised.
void finalize_mpi();

}  // namespace scion::runtime
