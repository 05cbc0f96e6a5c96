// `scion --version`: version, build options, whether the CUDA plugin loaded and which
// devices it sees (or why none).
#pragma once

namespace scion::cli {

void print_version(bool json);

}  // namespace scion::cli
