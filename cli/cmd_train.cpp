// `scion train`, `scion adapt` and `scion run`: train what is out of date.
#include <cstdint>
#include <iostream>
#include <string>
#include <vector>

#include "cli/cmd_test.h"
#include "cli/commands.h"
#include "cli/exit_codes.h"
#include "cli/output.h"
#include "cli/training_session.h"
#include "runtime/comm/communicator.h"

namespace scion::cli {
namespace {

// Options the three commands share.
struct TrainOptions {
  std::vector<std::string> models;
  bool force = false;
  bool resume = false;
  std::int64_t memory_budget_mib = 0;
  bool ignore_memory_limit = false;
  std::string precision;  // empty: each recipe's own
  bool recompute = false;
  std::string parallel = "data";  // only rank 0 writes the store unless asked otherwise
  bool profile = false;
};

CLI::App* add_training_subcommand(CLI::App& app, const char* name, const char* description,
                                  const char* example, TrainOptions& options) {
  CLI::App* cmd = app.add_subcommand(name, description);
  cmd->add_option("models", options.models, "Models to train (default: every one in scope)");
  cmd->add_flag("--force", options.force, "Retrain models whose recipe is already trained");
  cmd->add_flag("--resume", options.resume, "Continue interrupted runs from their checkpoints");
  cmd->add_option(
         "--memory-budget", options.memory_budget_mib,
         "MiB a co-batched group may use (estimate as in `scion plan`; default: half of RAM)")
      ->check(whole_number(1, kMaxMemoryBudgetMib));
  cmd->add_flag(
      "--ignore-memory-limit", options.ignore_memory_limit,
      "Train even when the estimated memory exceeds what is available or --memory-budget");
  cmd->add_option("--precision", options.precision,
                  "Train in this precision whatever the recipes say (fp32 or bf16; changes the "
                  "recipe hashes)")
      ->check(CLI::IsMember({"fp32", "bf16"}));
  cmd->add_flag("--recompute", options.recompute,
                "Recompute each block's activations in the backward pass instead of keeping "
                "them (less memory, more time; same results, so recipe hashes stay)");
  cmd->add_option("--parallel", options.parallel,
                  "Under mpirun: data (every rank trains every group on its share of the rows; "
                  "the default: rank 0 alone writes the store), task (groups of different "
                  "trunks on different ranks at once, each rank writing the store; ranks of "
                  "one machine only) or auto (task for a wave with at least as many trunks as "
                  "ranks, on one machine; else data)")
      ->check(CLI::IsMember({"data", "task", "auto"}));
  cmd->add_flag("--profile", options.profile,
                "Time the run by class of work (products, attention, norms, activations, "
                "loss, optimizer, data, store, ...) and print it after the summary");
  cmd->footer(example);
  return cmd;
}

// The request the options ask for, in `scope`.
workbench::TrainRequest request_for(workbench::TrainScope scope, const TrainOptions& options) {
  workbench::TrainRequest request{.scope = scope,
                                  .models = options.models,
                                  .force = options.force,
                                  .resume = options.resume,
                                  .memory_budget_mib = options.memory_budget_mib,
                                  .ignore_memory_limit = options.ignore_memory_limit,
                                  .recompute = options.recompute,
                                  .parallel = options.parallel == "data"   ? workbench::Parallelism::kData
                                              : options.parallel == "task" ? workbench::Parallelism::kTask
                                                                           : workbench::Parallelism::kAuto};
  if (!options.precision.empty())
    request.precision =
        options.precision == "bf16" ? spec::Precision::kBF16 : spec::Precision::kF32;
  return request;
}

}  // namespace

void add_train_command(CLI::App& app, const GlobalOptions& global, CommandAction& action) {
  static TrainOptions options;
  CLI::App* cmd = add_training_subcommand(
      app, "train",
      "Pretrain or fully train base models (masked LM for encoders, causal LM for decoders)",
      "Example: scion -C examples/sentiment train base", options);
  cmd->callback([&global, &action] {
    action = [&global] {
      return run_training(global, request_for(workbench::TrainScope::kBases, options),
                          options.profile);
    };
  });
}

void add_adapt_command(CLI::App& app, const GlobalOptions& global, CommandAction& action) {
  static TrainOptions options;
  CLI::App* cmd = add_training_subcommand(
      app, "adapt",
      "Train descendants, parents first; descendants of one frozen trunk train co-batched",
      "Example: scion -C examples/sentiment adapt review-lora review-prefix", options);
  cmd->callback([&global, &action] {
    action = [&global] {
      return run_training(global, request_for(workbench::TrainScope::kDescendants, options),
                          options.profile);
    };
  });
}

void add_run_command(CLI::App& app, const GlobalOptions& global, CommandAction& action) {
  static TrainOptions options;
  static bool rerun = false;
  CLI::App* cmd = add_training_subcommand(
      app, "run",
      "Do everything out of date in dependency order: import, restore, train, adapt, then test",
      "Imports the bases the spec declares with `import:`, restores stored versions of\n"
      "recipes that came back, trains and adapts the rest, then ends with `scion test`\n"
      "on the tested models (exit status 1 when a test fails), which judges only what the\n"
      "store holds no result of. With --json only the training summary is printed: run\n"
      "`scion test --json` after it.\n"
      "Example: scion -C examples/sentiment run",
      options);
  cmd->add_flag("--rerun", rerun,
                "Judge every test again, also those whose result the store already holds");
  cmd->callback([&global, &action] {
    action = [&global] {
      const int trained =
          run_training(global, request_for(workbench::TrainScope::kAll, options), options.profile);
      if (trained != kExitOk || global.json) return trained;
      // Under mpirun every rank tests a share of the cases (docs/distributed.md).
      if (auto world = runtime::world_communicator(); world && (*world)->rank() == 0)
        std::cout << "\n";
      TestOptions tests;
      tests.models = options.models;
      tests.only_tested = true;
      tests.rerun = rerun;
      return run_behavioural_tests(global, tests);
    };
  });
}

}  // namespace scion::cli
