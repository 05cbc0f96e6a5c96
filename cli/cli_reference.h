// The man page and the bash and zsh completions of `scion`, generated from the CLI11 app
// itself, so that they list exactly the commands and options the parser accepts. The build
// runs `scion --generate man|bash|zsh` (a hidden option) and `meson install` installs the
// results (cli/meson.build).
#pragma once

#include <CLI/CLI.hpp>
#include <string>

namespace scion::cli {

std::string man_page(const CLI::App& app);
std::string bash_completion(const CLI::App& app);
std::string zsh_completion(const CLI::App& app);

}  // namespace scion::cli
