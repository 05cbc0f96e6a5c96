// `--device cpu|cuda|auto`: which backend the command's training, evaluation, prediction
// and tests run on (runtime/compute_device.h).
#pragma once

#include <string>

#include "base/status.h"
#include "runtime/tensor.h"

namespace scion::cli {

// The device `device` (the option's text) means here. auto is CUDA when the plugin loaded
// and sees a device, else the CPU, and never fails; cuda without a usable device is
// kUnavailable (exit 3) with the reason: the plugin was not built or did not load, or no
// device is visible.
Result<runtime::Device> choose_device(const std::string& device);

// One line for `scion --version`: the device `device` resolves to, and why.
std::string describe_device_choice(const std::string& device);

}  // namespace scion::cli
