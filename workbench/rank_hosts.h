// Which machines the ranks of an mpirun job run on, and what that allows.
//
// Task-parallel training has every rank write the store (docs/distributed.md). The store
// is one SQLite database; on one machine its writers take POSIX locks that the kernel
// keeps, but ranks on several machines share it only through a network file system, whose
// locks SQLite's own documentation calls unreliable (NFS: lock daemons that lose or
// ignore locks), so two machines' writers could corrupt it. A job whose ranks are on more
// than one machine therefore runs data parallel (rank 0 alone writes): `auto` falls back
// to data, and `task`, asked for explicitly, is refused before any rank opens the store.
// Host names come from gethostname(); every rank receives every rank's (all_gather), so
// all of them decide alike. Pure functions apart from that exchange; not thread-safe.
#pragma once

#include <string>
#include <vector>

#include "base/status.h"
#include "runtime/comm/communicator.h"
#include "workbench/training_request.h"

namespace scion::workbench {

// Every rank's host name, in rank order (one name for a single process).
// Errors: kUnavailable when a peer is gone.
Result<std::vector<std::string>> rank_hosts(runtime::Communicator& comm);

// The parallelism a training job of ranks on `hosts` (in rank order) runs with:
// `requested` when every rank is on one machine; across machines kData for kAuto and
// kData, and kInvalidArgument (exit 2) for kTask, saying which ranks are where.
Result<Parallelism> parallelism_on_hosts(Parallelism requested,
                                         const std::vector<std::string>& hosts);

}  // namespace scion::workbench
