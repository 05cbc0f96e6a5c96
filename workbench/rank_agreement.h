// What the ranks of `mpirun -np N scion run|train|adapt|test|eval` must hold alike before
// any of them does any work, checked over the communicator (runtime/comm/value_agreement.h):
//   - scion's version;
//   - each dataset's digest, and each imported base's checkpoint digest;
//   - the spec's canonical digest (spec/recipe_hash.h: every recipe, test and assertion);
//   - for training, the plan: every model's state and recipe, every group and its wave.
// A rank whose spec or data differ (a per-rank wrapper script, a node with an older copy)
// ends every rank with the same spec error (exit 2) naming what differs, before the store
// is written. The plan is agreed separately because it also depends on the store, which
// every rank reads after the spec.
#pragma once

#include "base/status.h"
#include "runtime/comm/communicator.h"
#include "spec/workspace.h"
#include "workbench/plan.h"

namespace scion::workbench {

// REQUIRES: `ws` is valid (load_checked), so its recipe hashes and digests are set.
Status agree_on_workspace(runtime::Communicator& comm, const spec::Workspace& ws);

Status agree_on_plan(runtime::Communicator& comm, const Plan& plan);

}  // namespace scion::workbench
