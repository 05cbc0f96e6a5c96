// The lineage store under mpirun (docs/distributed.md): rank 0 opens it first (creating
// or migrating it) and the other ranks then open it, to read (data-parallel training,
// sharded test and eval: rank 0 alone writes) or to write their own models too
// (task-parallel training). The ranks agree after each step, so that a rank that cannot
// open it stops them all.
#pragma once

#include <functional>
#include <memory>

#include "base/status.h"
#include "lineage/store.h"
#include "runtime/comm/communicator.h"

namespace scion::workbench {

using StoreOpener = std::function<Result<std::unique_ptr<lineage::LineageStore>>()>;

// Calls `for_writing` on rank 0, then `for_the_others` on every other rank. Every rank returns
// the same error when one failed (Communicator::agree).
Result<std::unique_ptr<lineage::LineageStore>> open_store_on_ranks(runtime::Communicator& comm,
                                                                   const StoreOpener& for_writing,
                                                                   const StoreOpener& for_the_others);

}  // namespace scion::workbench
