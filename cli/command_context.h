// The workbench context (workbench/context.h) a command asks for, made from the global
// options: the store they name (--store, or .scion/ beside the spec) opened as the command
// needs it, and the device --device resolved to. And what opening a store for writing has
// to tell the user: the runs it found abandoned.
#pragma once

#include <memory>

#include "cli/global_options.h"
#include "spec/workspace.h"
#include "workbench/context.h"

namespace scion::cli {

// ContextOptions for `global`, the store opened as `store` says (StoreAccess::kNone: the
// command opens it later, as training does once the ranks' placement is known).
workbench::ContextOptions context_options(const GlobalOptions& global,
                                          workbench::StoreAccess store);

// The context of a command that works over `ws` on mpirun's ranks (one process: rank 0):
// the ranks agree on the spec, then rank 0 opens the store as `store` says (kWrite: it
// must exist) and the other ranks read-only; abandoned runs are noted. Errors: the ranks'
// disagreement (a spec error), the store's, on every rank alike.
Result<std::unique_ptr<workbench::Context>> open_command_context(const GlobalOptions& global,
                                                                 const spec::Workspace& ws,
                                                                 workbench::StoreAccess store);

// The context of a command that needs only the store (lineage, fsck, gc, import, export,
// tag, plan, report, test --compare): no ranks, no backend; the store opened as `store`
// says (kRead keeps a store this user may not write readable). Opening it for writing
// notes the runs it found abandoned. Errors: the store's (kNotFound: there is none).
Result<std::unique_ptr<workbench::Context>> open_store_context(const GlobalOptions& global,
                                                               workbench::StoreAccess store);

// Notes each run the context's store marked abandoned when it was opened (its process is
// gone without having recorded how the run ended); nothing under -q.
void note_abandoned_runs(const GlobalOptions& global, const workbench::Context& context);

}  // namespace scion::cli
