// `scion --version`: version, build options and the CUDA devices this build can see.
#pragma once

namespace scion::cli {

void print_version(bool json);

}  // namespace scion::cli
