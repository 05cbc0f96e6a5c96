#include "cli/command_context.h"

#include <string>

#include "cli/output.h"

namespace scion::cli {

workbench::ContextOptions context_options(const GlobalOptions& global,
                                          workbench::StoreAccess store) {
  return {.store_dir = global.store_path(),
          .store = store,
          .other_ranks = workbench::StoreAccess::kRead,
          .device = global.compute_device};
}

Result<std::unique_ptr<workbench::Context>> open_command_context(const GlobalOptions& global,
                                                                 const spec::Workspace& ws,
                                                                 workbench::StoreAccess store) {
  workbench::ContextOptions options = context_options(global, store);
  options.ranks = true;
  options.agree_on = &ws;
  auto context = workbench::Context::open(options);
  if (context) note_abandoned_runs(global, **context);
  return context;
}

Result<std::unique_ptr<workbench::Context>> open_store_context(const GlobalOptions& global,
                                                               workbench::StoreAccess store) {
  auto context = workbench::Context::open(context_options(global, store));
  if (context) note_abandoned_runs(global, **context);
  return context;
}

void note_abandoned_runs(const GlobalOptions& global, const workbench::Context& context) {
  if (global.verbosity < 0) return;
  for (const lineage::RunRecord& run : context.abandoned_runs())
    print_note("run " + std::to_string(run.id) + " of '" + run.model + "' is now marked " +
               "abandoned: its process (pid " + std::to_string(run.pid.value_or(0)) +
               ") is gone without having recorded how the run ended");
}

}  // namespace scion::cli
