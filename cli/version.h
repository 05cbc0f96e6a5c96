// `scion --version`: version, build options, whether the CUDA plugin loaded and which
// devices it sees (or why none), and the compute device `--device` (its text: cpu, cuda
// or auto) chooses here.
#pragma once

#include <string>

namespace scion::cli {

void print_version(bool json, const std::string& device);

}  // namespace scion::cli
