// The CUDA Backend (runtime/backend.h) on the current device, made by the plugin's
// factory (plugin_abi.h). Every op runs on the legacy default stream in issue order;
// copy_to_host, squared_norm and cross_entropy_forward wait for the device, so their host
// values are final when they return.
#pragma once

#include <memory>
#include <string>

#include "runtime/backend.h"

namespace scion::runtime::cuda {

// A backend in `precision` on the current device, or null with *why set (no device,
// cuBLAS would not start, no memory for its scratch). allow_tf32: fp32 products may use
// TF32 tensor cores (about 1e-3 relative error; off unless asked for).
std::unique_ptr<Backend> make_backend(Precision precision, bool allow_tf32, std::string* why);

}  // namespace scion::runtime::cuda
