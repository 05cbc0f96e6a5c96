// scion: a workbench for families of adapted models. See README.md and docs/cli.md.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <iostream>
#include <new>
#include <string_view>
#include <vector>

#include "cli/cli_reference.h"
#include "cli/cmd_lineage_support.h"
#include "cli/commands.h"
#include "cli/device_choice.h"
#include "cli/exit_codes.h"
#include "cli/global_options.h"
#include "cli/interrupts.h"
#include "cli/output.h"
#include "cli/version.h"
#include "runtime/adapters/registry.h"
#include "runtime/comm/communicator.h"

namespace scion::cli {

void add_validate_command(CLI::App& app, const GlobalOptions& global, CommandAction& action);
void add_plan_command(CLI::App& app, const GlobalOptions& global, CommandAction& action);
void add_export_command(CLI::App&, const GlobalOptions&, CommandAction&);
void add_fsck_command(CLI::App&, const GlobalOptions&, CommandAction&);
void add_gc_command(CLI::App&, const GlobalOptions&, CommandAction&);
void add_train_command(CLI::App&, const GlobalOptions&, CommandAction&);
void add_adapt_command(CLI::App&, const GlobalOptions&, CommandAction&);
void add_run_command(CLI::App&, const GlobalOptions&, CommandAction&);
void add_import_command(CLI::App&, const GlobalOptions&, CommandAction&);
void add_lineage_command(CLI::App&, const GlobalOptions&, CommandAction&);
void add_test_command(CLI::App&, const GlobalOptions&, CommandAction&);
void add_predict_command(CLI::App&, const GlobalOptions&, CommandAction&);
void add_eval_command(CLI::App&, const GlobalOptions&, CommandAction&);
void add_report_command(CLI::App&, const GlobalOptions&, CommandAction&);
void add_init_command(CLI::App&, const GlobalOptions&, CommandAction&);
void add_schema_command(CLI::App&, const GlobalOptions&, CommandAction&);
void add_export_runs_command(CLI::App&, const GlobalOptions&, CommandAction&);
void add_tag_command(CLI::App&, const GlobalOptions&, CommandAction&);

namespace {

// Subcommands, in the order `scion --help` lists them.
const std::vector<AddCommand>& all_commands() {
  static const std::vector<AddCommand> commands = {
      add_init_command,   add_validate_command,    add_plan_command,   add_train_command,
      add_adapt_command,  add_run_command,         add_test_command,   add_predict_command,
      add_eval_command,   add_lineage_command,     add_report_command, add_import_command,
      add_export_command, add_export_runs_command, add_fsck_command,   add_gc_command,
      add_tag_command,    add_schema_command,
  };
  return commands;
}

void add_global_options(CLI::App& app, GlobalOptions& g, bool& show_version) {
  app.add_option("-C", g.workspace_dir, "Run as if scion was started in DIR")
      ->option_text("DIR");
  app.add_option("-f,--file", g.spec_file, "Workspace spec (default: scion.yaml)")
      ->option_text("FILE");
  app.add_option("--store", g.store_dir, "Lineage store directory (default: .scion/ beside the spec)")
      ->option_text("DIR");
  app.add_flag("--json", g.json, "Machine-readable output on stdout");
  app.add_flag_function("-v,--verbose", [&g](std::int64_t n) { g.verbosity += static_cast<int>(n); },
                        "More detail (repeat for more)");
  app.add_flag_function("-q,--quiet", [&g](std::int64_t n) { g.verbosity -= static_cast<int>(n); },
                        "Only errors and results");
  app.add_option("--device", g.device, "Compute device: cpu (the default), cuda, or auto (CUDA "
                 "when a device is usable, else the CPU); the CUDA backend is unverified on "
                 "a GPU (docs/gpu.md)")
      ->check(CLI::IsMember({"auto", "cpu", "cuda"}))
      ->option_text("DEVICE");
  app.add_flag("--version", show_version, "Version, build options, CUDA backend and devices");
}

// libgomp reads its wait settings once, as it loads, before main. Its default keeps idle
// workers spinning for a while (300,000 polls) after every parallel loop: ruinous beside
// any other busy process, whose threads the spinning starves; sleeping at once
// (OMP_WAIT_POLICY=passive) costs a run alone the futex wake-up of every loop, and a step
// of a small model runs hundreds of loops. A short spin keeps most of both. Measured on 2
// cores with `scion run` of the example family (bench/README.md, "OpenMP waiting"),
// medians of 3: alone 30.5 s spinning (active), 41.2 s passive, 31.6 s with
// GOMP_SPINCOUNT=1000; two at once over 150 s spinning, 45.7 s passive, 54.3 s with the
// short spin. So unless the user chose (OMP_WAIT_POLICY or GOMP_SPINCOUNT), scion starts
// itself again, once, with GOMP_SPINCOUNT=1000.
void choose_openmp_wait_policy(char** argv) {
  if (std::getenv("OMP_WAIT_POLICY") != nullptr || std::getenv("GOMP_SPINCOUNT") != nullptr) return;
  if (setenv("GOMP_SPINCOUNT", "1000", 1) != 0) return;
  execv("/proc/self/exe", argv);  // returns only when it fails: go on with the default
}

// Under --json, a failure that printed no JSON document prints the error object, so stdout
// always holds one document (docs/json.md).
int with_json_error(const GlobalOptions& global, int code, bool json_flag_seen = false) {
  if ((global.json || json_flag_seen) && code != kExitOk && !json_document_printed())
    print_json(json_error_document(code));
  return code;
}

int run(int argc, char** argv) {
  CLI::App app{"scion: train, test and trace families of adapted models"};
  app.footer(
      "Exit codes: 0 ok, 1 the work ran and found failures, 2 usage or spec error,\n"
      "            3 store or runtime error, 130 interrupted.\n"
      "Example:    scion -C examples/sentiment validate");
  app.fallthrough();  // global options may follow the subcommand
  app.require_subcommand(0, 1);

  GlobalOptions global;
  bool show_version = false;
  add_global_options(app, global, show_version);
  CommandAction action;
  for (AddCommand add : all_commands()) add(app, global, action);
  // The build writes the man page and completions from the app (cli/cli_reference.h).
  std::string generate;
  app.add_option("--generate", generate, "")->check(CLI::IsMember({"man", "bash", "zsh"}))->group("");

  // --json is known before parsing, so a usage error is a JSON document too (and only then).
  bool json_requested = false;
  for (int i = 1; i < argc; ++i)
    if (std::string_view(argv[i]) == "--json") json_requested = true;
  if (json_requested) enable_json_errors();
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    print_error(e.what());
    std::cerr << "Run 'scion --help' for usage.\n";
    return with_json_error(global, kExitUsage, json_requested);
  }

  if (!generate.empty()) {
    std::cout << (generate == "man"    ? man_page(app)
                  : generate == "bash" ? bash_completion(app)
                                       : zsh_completion(app));
    return kExitOk;
  }
  if (show_version) {
    print_version(global.json, global.device);
    return kExitOk;
  }
  if (!global.workspace_dir.empty() && chdir(global.workspace_dir.c_str()) != 0) {
    print_error("cannot enter directory '" + global.workspace_dir + "' given with -C");
    return with_json_error(global, kExitUsage);
  }
  if (!action) {
    std::cout << app.help();
    return kExitUsage;
  }
  auto device = choose_device(global.device);
  if (!device) return with_json_error(global, fail(device.status()));
  global.compute_device = *device;
  // Under mpirun this process is one rank of several (runtime/comm/communicator.h).
  auto world = runtime::world_communicator();
  if (!world) return with_json_error(global, fail(world.status()));
  // Training, testing and evaluation are spread over the ranks; any other command runs on
  // rank 0 only, so that N copies never write the store at once (docs/distributed.md).
  const bool distributed = app.got_subcommand("train") || app.got_subcommand("adapt") ||
                           app.got_subcommand("run") || app.got_subcommand("test") ||
                           app.got_subcommand("eval");
  if ((*world)->rank() != 0 && !distributed) {
    runtime::finalize_world_communicator();
    return kExitOk;
  }
  const int code = with_json_error(global, action());
  runtime::finalize_world_communicator();
  return code;
}

// Results go to stdout through its buffer, so a write that fails (a full disk, /dev/full)
// shows only when the buffer is flushed: flushed here, before exiting, a failure is exit
// 3 whatever the command returned, so a script never takes a truncated result for one.
int with_stdout_flushed(int code) {
  std::cout.flush();
  errno = 0;
  if (std::fflush(stdout) == 0 && !std::ferror(stdout) && std::cout.good()) return code;
  if (code != kExitOk && code != kExitFailures) return code;  // the command said why already
  const int err = errno;
  print_error(std::string("writing the result to standard output failed") +
              (err != 0 ? std::string(": ") + std::strerror(err) : std::string()) +
              "; the output is incomplete");
  return kExitRuntime;
}

}  // namespace
}  // namespace scion::cli

int main(int argc, char** argv) {
  scion::cli::choose_openmp_wait_policy(argv);
  scion::cli::route_interrupts();  // before any thread starts: cli/interrupts.h says why
  // A write past the file size limit (ulimit -f) then fails with EFBIG, which the store
  // reports like a full disk (exit 3, the store consistent), instead of killing scion.
  std::signal(SIGXFSZ, SIG_IGN);
  scion::runtime::register_adaptation_methods();  // before any spec is read
  try {
    return scion::cli::with_stdout_flushed(scion::cli::run(argc, argv));
  } catch (const std::bad_alloc&) {
    // Large buffers come from checked allocations (runtime::Arena::create); this is any
    // other one, which cannot say how much it wanted.
    scion::cli::print_error("out of memory; free memory, or lower batch_size, max_length or the "
                            "architecture's size in the spec");
    return scion::cli::kExitRuntime;
  } catch (const std::exception& e) {
    scion::cli::print_error(std::string("internal error: ") + e.what() +
                            " (please report this as a scion bug)");
    return scion::cli::kExitRuntime;
  }
}
