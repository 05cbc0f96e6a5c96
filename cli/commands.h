// The subcommands of `scion`. Each lives in its own cmd_<name>.cpp and adds itself to
// the CLI11 app; when the user selects it, its callback stores the work to run in
// `action`, which main() runs after parsing and turns into the exit code.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>

#include "cli/global_options.h"

namespace scion::cli {

using CommandAction = std::function<int()>;
using AddCommand = void (*)(CLI::App& app, const GlobalOptions& global, CommandAction& action);

}  // namespace scion::cli
