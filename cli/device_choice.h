// `--device cpu|cuda|auto`: which backend the command's training and evaluation run on.
#pragma once

#include <string>

#include "base/status.h"

namespace scion::cli {

// cpu and auto run on the CPU backend. cuda is refused with kUnavailable (exit 3) and the
// reason: the plugin was not built or did not load, no device is visible, or (where one
// is) the CUDA backend does not implement the ops yet. auto never fails: until the CUDA
// backend has ops it means the CPU.
Status check_device_choice(const std::string& device);

}  // namespace scion::cli
