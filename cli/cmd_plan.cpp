// `scion plan`: what `scion run` would do now (workbench/plan.h): the family tree with each
// model's methods, inheritance, parameters, memory and FLOPs estimates, which models are
// up to date in the store and which run, in which co-batched groups, and with --ranks how
// the groups of different trunks would spread over MPI ranks. Reads the spec and the
// store (read only; no store yet means every model runs); nothing is trained or written.
#include <iostream>

#include "cli/cmd_lineage_support.h"
#include "cli/command_context.h"
#include "cli/commands.h"
#include "cli/exit_codes.h"
#include "cli/output.h"
#include "cli/plan_output.h"
#include "workbench/checked_workspace.h"
#include "workbench/plan.h"
#include "workbench/rank_assignment.h"

namespace scion::cli {
namespace {

// Larger than any mpirun job scion could coordinate; assigning groups to more ranks
// only allocates empty ranks.
constexpr std::int64_t kMaxPlannedRanks = 65536;

struct PlanOptions {
  std::int64_t memory_budget_mib = 0;
  int ranks = 0;  // 0: no rank assignment shown
};

int run_plan(const GlobalOptions& global, const PlanOptions& options) {
  workbench::CheckedWorkspace checked = workbench::load_checked(global.spec_file);
  print_diagnostics(checked);
  if (!checked.workspace) {
    std::cerr << "the spec has errors; fix them and plan again\n";
    return kExitUsage;
  }
  auto context = open_store_context(global, workbench::StoreAccess::kReadIfPresent);
  if (!context) return fail(context.status());
  auto plan = workbench::make_plan(checked, (*context)->store_or_null(),
                                   {.memory_budget_mib = options.memory_budget_mib});
  if (!plan) return fail(plan.status());
  // `scion run` would refuse these before any work; the plan still shows them.
  if (Status refusal = plan->memory_refusal(); !refusal.is_ok())
    print_warning("`scion run` would refuse this plan: " + refusal.message());
  std::vector<workbench::RankWork> ranks;
  if (options.ranks > 0) ranks = workbench::assign_ranks(*plan, options.ranks);
  const std::vector<workbench::RankWork>* shown = options.ranks > 0 ? &ranks : nullptr;
  if (global.json)
    print_json(plan_json(*plan, shown));
  else
    print_plan_text(*plan, shown);
  return kExitOk;
}

}  // namespace

void add_plan_command(CLI::App& app, const GlobalOptions& global, CommandAction& action) {
  CLI::App* cmd = app.add_subcommand(
      "plan", "Show what `scion run` would do: the family tree, what is up to date, the groups");
  static PlanOptions options;
  cmd->add_option("--memory-budget", options.memory_budget_mib,
                  "MiB a co-batched training group may use (default: half of RAM)")
      ->check(whole_number(1, kMaxMemoryBudgetMib));
  cmd->add_option("--ranks", options.ranks,
                  "Also show how the groups of different trunks would spread over N MPI ranks")
      ->check(whole_number(1, kMaxPlannedRanks));
  cmd->footer(
      "Memory is an fp32 estimate per training step; docs/cli.md explains each term.\n"
      "Exit codes: 0 ok, 2 the spec has errors, 3 the store cannot be read.\n"
      "Examples:   scion -C examples/sentiment plan\n"
      "            scion plan --ranks 2\n"
      "            scion plan --json | jq '.models[] | {name, state, parameters}'");
  cmd->callback([&global, &action] { action = [&global] { return run_plan(global, options); }; });
}

}  // namespace scion::cli
