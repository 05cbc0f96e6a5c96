// The subcommands of `scion`. Each lives in its own cmd_<name>.cpp and adds itself to
// the CLI11 app; when the user selects it, its callback stores the work to run in
// `action`, which main() runs after parsing and turns into the exit code.
#pragma once

#include <CLI/CLI.hpp>
#include <charconv>
#include <cstdint>
#include <functional>
#include <string>

#include "cli/global_options.h"

namespace scion::cli {

using CommandAction = std::function<int()>;
using AddCommand = void (*)(CLI::App& app, const GlobalOptions& global, CommandAction& action);

// --memory-budget's largest value: 1 PiB in MiB.
inline constexpr std::int64_t kMaxMemoryBudgetMib = std::int64_t{1} << 30;

// A check for an option taking a whole number from `min` to `max`: the message says so
// ("expected a whole number from 1 to 65536, got '0'"), where CLI11's PositiveNumber
// would print the range of a double. The bound also keeps a huge value from sizing work
// (plan --ranks 100000000 once took 9.4 GB).
inline CLI::Validator whole_number(std::int64_t min, std::int64_t max) {
  return CLI::Validator(
      [min, max](std::string& text) -> std::string {
        std::int64_t value = 0;
        const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
        if (ec == std::errc() && end == text.data() + text.size() && value >= min && value <= max)
          return "";
        return "expected a whole number from " + std::to_string(min) + " to " +
               std::to_string(max) + ", got '" + text + "'";
      },
      "INT in [" + std::to_string(min) + " - " + std::to_string(max) + "]");
}

}  // namespace scion::cli
